/* The guide's "an async API that takes a callback queue", in C (docs/guide.md). */
#include "guide_support.h"
#include <string.h>

/* guide:begin callback_queue */
typedef void (*checksum_callback_t)(void *context, uint32_t checksum);

struct checksum_request {
    const unsigned char *bytes;
    size_t length;
    cq_queue_t callback_queue; /* retained until the callback has been queued */
    void *context;
    checksum_callback_t callback;
    uint32_t checksum;
};

static void deliver_checksum(void *context)
{
    struct checksum_request request = *(struct checksum_request *)context;
    free(context);
    request.callback(request.context, request.checksum); /* on the caller's queue */
}

static void compute_checksum(void *context)
{
    struct checksum_request *request = context;
    uint32_t sum = 0;
    for (size_t i = 0; i < request->length; i++) {
        sum = sum * 31 + request->bytes[i];
    }
    request->checksum = sum;
    cq_queue_t callback_queue = request->callback_queue;
    cq_async_f(callback_queue, request, deliver_checksum);
    cq_release(callback_queue);
}

/* Returns at once; calls callback(context, checksum) on callback_queue. */
static void checksum_async(const unsigned char *bytes, size_t length, cq_queue_t callback_queue,
                           void *context, checksum_callback_t callback)
{
    struct checksum_request *request = malloc(sizeof *request);
    *request = (struct checksum_request){bytes, length, callback_queue, context, callback, 0};
    cq_retain(callback_queue);
    cq_async_f(cq_get_global_queue(CQ_QUEUE_PRIORITY_LOW, 0), request, compute_checksum);
}
/* guide:end callback_queue */

struct result {
    cq_queue_t expected_queue;
    cq_semaphore_t done;
    uint32_t checksum;
    bool on_expected_queue;
};

static void got_checksum(void *context, uint32_t checksum)
{
    struct result *result = context;
    result->checksum = checksum;
    result->on_expected_queue = cq_queue_is_current(result->expected_queue);
    cq_semaphore_signal(result->done);
}

int main(void)
{
    const char *text = "abc";
    struct result result = {cq_queue_create("ui", CQ_QUEUE_SERIAL), cq_semaphore_create(0), 0,
                            false};
    checksum_async((const unsigned char *)text, strlen(text), result.expected_queue, &result,
                   got_checksum);
    GUIDE_CHECK(cq_semaphore_wait(result.done, guide_patience()) == 0);
    GUIDE_CHECK(result.checksum == ((uint32_t)'a' * 31 + 'b') * 31 + 'c');
    GUIDE_CHECK(result.on_expected_queue);
    cq_release(result.expected_queue);
    cq_release(result.done);
    return 0;
}
