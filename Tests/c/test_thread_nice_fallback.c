/*
 * test_thread_nice.c again on the fallback file engine (CQ_IO_URING=0): the read that the
 * background task starts runs on a "cq-io-pool" thread, which must carry that name and the
 * pool's nice value.
 */
#define CQ_TEST_IO_FALLBACK 1
#include "test_thread_nice.c"
