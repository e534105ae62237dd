// KioskInput
