/* The guide's "thread joins replaced by groups", in C (docs/guide.md). */
#include "guide_support.h"

/* guide:begin groups */
struct chunk {
    const int *numbers;
    size_t count;
    long sum; /* written by this chunk's task only */
};

static void sum_chunk(void *context)
{
    struct chunk *chunk = context;
    for (size_t i = 0; i < chunk->count; i++) {
        chunk->sum += chunk->numbers[i];
    }
}

static long sum_in_chunks(const int *numbers, size_t count, struct chunk *chunks, size_t n)
{
    cq_group_t group = cq_group_create();
    cq_queue_t pool = cq_get_global_queue(CQ_QUEUE_PRIORITY_DEFAULT, 0);
    size_t per_chunk = (count + n - 1) / n;
    for (size_t c = 0; c < n; c++) {
        size_t start = c * per_chunk < count ? c * per_chunk : count;
        size_t end = start + per_chunk < count ? start + per_chunk : count;
        chunks[c] = (struct chunk){numbers + start, end - start, 0};
        cq_group_async_f(group, pool, &chunks[c], sum_chunk); /* was pthread_create */
    }
    cq_group_wait(group, CQ_TIME_FOREVER); /* was one pthread_join per thread */
    cq_release(group);
    long total = 0;
    for (size_t c = 0; c < n; c++) {
        total += chunks[c].sum;
    }
    return total;
}
/* guide:end groups */

int main(void)
{
    enum { COUNT = 100000, CHUNKS = 8 };
    static int numbers[COUNT];
    for (int i = 0; i < COUNT; i++) {
        numbers[i] = i + 1;
    }
    struct chunk chunks[CHUNKS];
    GUIDE_CHECK(sum_in_chunks(numbers, COUNT, chunks, CHUNKS) == (long)COUNT * (COUNT + 1) / 2);
    return 0;
}
