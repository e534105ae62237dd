/* startup-floor: the least a first clock frame costs with the libraries kioskd draws with.
 *
 * A C program linked to pango, pangocairo, cairo and fontconfig (as kioskd is) that does what
 * the clock's first frame needs and nothing else: fontconfig's configuration (FcInit), an
 * XRGB8888 frame in fresh anonymous memory filled with the background, the time and the colour
 * label sized to fit their boxes (measured at 100 px, as Canvas.fittingSize does) and drawn
 * with the clock's font options; then it prints "first-frame" and waits to be killed.
 * `kioskd-bench startup` times it from exec to that line beside kioskd and the pygame peer.
 *
 *   startup-floor [--size WxH] [--upto exec|fontconfig|frame|text]
 *
 * --upto stops after one layer (default: text, the whole frame): exec (the loader and the
 * libraries), fontconfig (+ FcInit), frame (+ the filled frame), text (+ the two texts).
 * Built by Benchmarks/build-floor.sh. */
#include <fontconfig/fontconfig.h>
#include <pango/pangocairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void reached(void) {
    puts("first-frame");
    fflush(stdout);
    for (;;) pause();
}

static void set_font(PangoLayout *l, PangoWeight weight, double px) {
    PangoFontDescription *d = pango_font_description_new();
    pango_font_description_set_family(d, "DejaVu Sans");
    pango_font_description_set_weight(d, weight);
    pango_font_description_set_absolute_size(d, px * PANGO_SCALE);
    pango_layout_set_font_description(l, d);
    pango_font_description_free(d);
}

/* The size at which `text` fits `bw` x `bh`, from its size at 100 px. */
static double fit(PangoLayout *l, PangoWeight weight, const char *text, double bw, double bh) {
    set_font(l, weight, 100);
    pango_layout_set_text(l, text, -1);
    int w = 0, h = 0;
    pango_layout_get_pixel_size(l, &w, &h);
    if (w <= 0 || h <= 0) return 1;
    double a = bw / w, b = bh / h;
    return 100 * (a < b ? a : b);
}

static void draw(cairo_t *cr, PangoLayout *l, PangoWeight weight, double px, const char *text, double x, double y) {
    set_font(l, weight, px);
    pango_layout_set_text(l, text, -1);
    cairo_move_to(cr, x, y);
    pango_cairo_show_layout(cr, l);
}

int main(int argc, char **argv) {
    int w = 1920, h = 1080;
    const char *upto = "text";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--size") == 0 && sscanf(argv[i + 1], "%dx%d", &w, &h) == 2 && w > 0 && h > 0) continue;
        if (strcmp(argv[i], "--upto") == 0) { upto = argv[i + 1]; continue; }
        fprintf(stderr, "startup-floor: unknown or bad argument %s\n", argv[i]);
        return 2;
    }
    if (strcmp(upto, "exec") == 0) reached();
    FcInit();
    if (strcmp(upto, "fontconfig") == 0) reached();
    int stride = w * 4;
    unsigned char *pixels = mmap(NULL, (size_t)stride * h, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pixels == MAP_FAILED) { perror("startup-floor: mmap"); return 1; }
    cairo_surface_t *surface = cairo_image_surface_create_for_data(pixels, CAIRO_FORMAT_RGB24, w, h, stride);
    cairo_t *cr = cairo_create(surface);
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_SLIGHT);
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
    cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
    cairo_paint(cr);
    cairo_surface_flush(surface);
    if (strcmp(upto, "frame") == 0) reached();
    PangoLayout *l = pango_cairo_create_layout(cr);
    double timePx = fit(l, PANGO_WEIGHT_BOLD, "20:08:08", w * 0.8, h * 0.4);
    double labelPx = fit(l, PANGO_WEIGHT_NORMAL, "#D8D8D8", w * 0.5, h * 0.1);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    draw(cr, l, PANGO_WEIGHT_BOLD, timePx, "06:58:12", w * 0.1, h * 0.3);
    draw(cr, l, PANGO_WEIGHT_NORMAL, labelPx, "#D8D8D8", w * 0.25, h * 0.75);
    cairo_surface_flush(surface);
    reached();
    return 0;
}
