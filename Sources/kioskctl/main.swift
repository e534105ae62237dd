import KioskctlCommand

Kioskctl.main()
