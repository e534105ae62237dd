// KioskDaemon
