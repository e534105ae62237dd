// KioskTesting
