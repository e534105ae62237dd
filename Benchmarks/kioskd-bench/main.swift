KioskdBench.main()
