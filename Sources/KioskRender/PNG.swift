import CCairo
import KioskCore

extension Canvas {
    /// Decodes a PNG file into a new canvas of the image's size (cairo_image_surface_create_from_png),
    /// painted over black where the image is transparent. Errors name the path.
    public static func loadPNG(path: String) throws -> Canvas {
        guard let img = cairo_image_surface_create_from_png(path) else {
            throw KioskError(.render, "cannot read PNG \(path): cairo returned no surface")
        }
        defer { cairo_surface_destroy(img) }
        let st = cairo_surface_status(img)
        guard st == CAIRO_STATUS_SUCCESS else {
            throw KioskError(.render, "cannot read PNG \(path): \(String(cString: cairo_status_to_string(st)))")
        }
        let size = Size(width: Int(cairo_image_surface_get_width(img)), height: Int(cairo_image_surface_get_height(img)))
        let canvas = try Canvas(size: size)
        canvas.clear(.black)
        cairo_save(canvas.cr)
        cairo_set_source_surface(canvas.cr, img, 0, 0)
        cairo_paint(canvas.cr)
        cairo_restore(canvas.cr)
        return canvas
    }
}
