#if canImport(Glibc)
import Glibc
#endif
import CKioskLazy
import CUdev
import KioskCore
import KioskPosix

/// A libudev context (`udev_new`), unreferenced when the last holder lets go. Devices and
/// monitors made from it hold it, so none of them can outlive it.
public final class Udev {
    /// The `struct udev *`, for libraries that take one (libinput's udev backend).
    public let pointer: OpaquePointer

    /// `udev_new`; throws naming the call and errno, or the missing library (libudev is opened
    /// when first needed: a headless kioskd never loads it).
    public init() throws {
        if let e = kiosk_lazy_load(Int32(KIOSK_LIB_UDEV)) { throw KioskError(.system, String(cString: e)) }
        guard let u = udev_new() else { throw Posix.error("udev_new", errno: errno) }
        pointer = u
    }

    deinit { udev_unref(pointer) }

    /// A device found by enumeration or received from a monitor: a copy of what kioskd reads.
    public struct Device: Sendable, Equatable {
        /// "add", "remove", "change", … for monitor events; nil for enumerated devices.
        public var action: String?
        /// Device node, e.g. "/dev/dri/card0" (nil for devices without one).
        public var devnode: String?
        /// Kernel name, e.g. "card0".
        public var sysname: String
        /// `ID_SEAT` (seat0 when unset).
        public var seat: String
        /// The PCI parent's `boot_vga` attribute is 1 (the firmware's boot display).
        public var bootVGA: Bool
        /// The symlinks udev made to the node (`/dev/dri/by-path/pci-0000:00:02.0-card`, …).
        public var devlinks: [String] = []

        public init(action: String? = nil, devnode: String?, sysname: String, seat: String = "seat0", bootVGA: Bool = false) {
            self.action = action; self.devnode = devnode; self.sysname = sysname; self.seat = seat; self.bootVGA = bootVGA
        }

        /// Copies what kioskd needs out of a `struct udev_device *` (the caller keeps its reference).
        init(_ dev: OpaquePointer) {
            action = udev_device_get_action(dev).map { String(cString: $0) }
            devnode = udev_device_get_devnode(dev).map { String(cString: $0) }
            sysname = udev_device_get_sysname(dev).map { String(cString: $0) } ?? ""
            seat = udev_device_get_property_value(dev, "ID_SEAT").map { String(cString: $0) } ?? "seat0"
            var boot = false
            if let pci = udev_device_get_parent_with_subsystem_devtype(dev, "pci", nil),
               let v = udev_device_get_sysattr_value(pci, "boot_vga") {
                boot = String(cString: v) == "1"
            }
            bootVGA = boot
            var links: [String] = []
            var entry = udev_device_get_devlinks_list_entry(dev)
            while let e = entry {
                if let name = udev_list_entry_get_name(e) { links.append(String(cString: name)) }
                entry = udev_list_entry_get_next(e)
            }
            devlinks = links
        }
    }

    /// Devices of `subsystem` whose kernel name matches the glob `sysname` (`udev_enumerate_*`).
    public func devices(subsystem: String, sysname: String? = nil) throws -> [Device] {
        guard let en = udev_enumerate_new(pointer) else { throw Posix.error("udev_enumerate_new", errno: errno) }
        defer { udev_enumerate_unref(en) }
        _ = udev_enumerate_add_match_subsystem(en, subsystem)
        if let sysname { _ = udev_enumerate_add_match_sysname(en, sysname) }
        let r = udev_enumerate_scan_devices(en)
        if r < 0 { throw Posix.error("udev_enumerate_scan_devices(\(subsystem))", errno: -r) }
        var out: [Device] = []
        var entry = udev_enumerate_get_list_entry(en)
        while let e = entry {
            defer { entry = udev_list_entry_get_next(e) }
            guard let syspath = udev_list_entry_get_name(e), let dev = udev_device_new_from_syspath(pointer, syspath) else { continue }
            out.append(Device(dev))
            udev_device_unref(dev)
        }
        return out
    }

    /// A `udev_monitor` on the "udev" netlink group for one subsystem: `fd` turns readable when
    /// events wait; `receive()` drains them.
    public final class Monitor {
        public let udev: Udev
        private let monitor: OpaquePointer

        /// `udev_monitor_new_from_netlink` + subsystem filter + `udev_monitor_enable_receiving`.
        public init(udev: Udev, subsystem: String) throws {
            self.udev = udev
            guard let m = udev_monitor_new_from_netlink(udev.pointer, "udev") else {
                throw Posix.error("udev_monitor_new_from_netlink", errno: errno)
            }
            monitor = m
            var r = udev_monitor_filter_add_match_subsystem_devtype(m, subsystem, nil)
            if r >= 0 { r = udev_monitor_enable_receiving(m) }
            if r < 0 {
                udev_monitor_unref(m)
                throw Posix.error("udev_monitor_enable_receiving(\(subsystem))", errno: -r)
            }
        }

        deinit { udev_monitor_unref(monitor) }

        /// The descriptor to watch for readability.
        public var fd: Int32 { udev_monitor_get_fd(monitor) }

        /// Every event waiting now (`udev_monitor_receive_device` until it returns NULL).
        public func receive() -> [Device] {
            var out: [Device] = []
            while let dev = udev_monitor_receive_device(monitor) {
                out.append(Device(dev))
                udev_device_unref(dev)
            }
            return out
        }
    }
}

/// A property of the udev device behind a `struct udev_device *` handed out by another library
/// (libinput's `libinput_device_get_udev_device`); the caller keeps its reference.
public func udevProperty(_ device: OpaquePointer, _ name: String) -> String? {
    udev_device_get_property_value(device, name).map { String(cString: $0) }
}

/// Gives back a reference to a `struct udev_device *` another library handed out (`udev_device_unref`).
public func udevRelease(_ device: OpaquePointer) {
    udev_device_unref(device)
}
