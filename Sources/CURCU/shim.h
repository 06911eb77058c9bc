/* liburcu for CQueueCore's C sources (never imported by Swift code). No _LGPL_SOURCE: the
 * project is Apache-2.0, so liburcu is used through its shared-library functions only. */
#include <urcu/urcu-bp.h>
#include <urcu/lfstack.h>
