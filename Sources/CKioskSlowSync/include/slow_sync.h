// fsync, fdatasync and syncfs, each made to wait KIOSK_BENCH_FSYNC_MS first (slow_sync.c).
