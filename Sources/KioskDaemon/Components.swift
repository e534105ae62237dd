// The daemon's components and the modules they use, seen by whoever imports KioskDaemon
// (kioskd, the tests, the benchmark) as when they were part of it.
@_exported import KioskComponent
@_exported import KioskControlServer
@_exported import KioskPanel
@_exported import KioskWebComponent
@_exported import KioskMQTTComponent
