// KioskScenes
