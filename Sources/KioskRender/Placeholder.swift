// KioskRender
