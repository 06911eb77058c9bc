/* The guide's producer-consumer, in C (docs/guide.md). */
#include "guide_support.h"

/* guide:begin producer_consumer */
struct pipeline {
    cq_queue_t consumer; /* consumes items one at a time, in the order they were produced */
    cq_semaphore_t room; /* bounds the items produced but not yet consumed */
    long sum;            /* the consumer's state: touched only on `consumer` */
};

struct item {
    struct pipeline *pipeline;
    long value;
};

static void consume(void *context)
{
    struct item *item = context;
    item->pipeline->sum += item->value;
    cq_semaphore_signal(item->pipeline->room); /* one more item may be produced */
    free(item);
}

static void produce(struct pipeline *pipeline, long value)
{
    cq_semaphore_wait(pipeline->room, CQ_TIME_FOREVER); /* a full pipeline holds us back */
    struct item *item = malloc(sizeof *item);
    *item = (struct item){pipeline, value};
    cq_async_f(pipeline->consumer, item, consume);
}

static void drained(void *context) {}

static long produce_and_consume(long items, intptr_t capacity)
{
    struct pipeline pipeline = {cq_queue_create("consumer", CQ_QUEUE_SERIAL),
                                cq_semaphore_create(capacity), 0};
    for (long i = 1; i <= items; i++) {
        produce(&pipeline, i);
    }
    cq_sync_f(pipeline.consumer, NULL, drained); /* returns after the last item is consumed */
    cq_release(pipeline.consumer);
    cq_release(pipeline.room);
    return pipeline.sum;
}
/* guide:end producer_consumer */

int main(void)
{
    GUIDE_CHECK(produce_and_consume(10000, 16) == 10000L * 10001 / 2);
    return 0;
}
