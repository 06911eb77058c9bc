/*
 * test_io_file.c again on the fallback engine: CQ_IO_URING=0 makes the file channels use the
 * bounded pool of blocking preadv/pwritev threads instead of io_uring.
 */
#define CQ_TEST_IO_FALLBACK 1
#include "test_io_file.c"
