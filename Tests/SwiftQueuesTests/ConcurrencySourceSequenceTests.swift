import SwiftQueues
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Sources as `AsyncSequence`s of their events: coalescing while the loop is busy, the source
/// cancelled when the loop ends, and the loop ended by cancellation.
@Suite struct ConcurrencySourceSequenceTests {
    @Test func testTimerEventsEndWithBreakAndCancelTheTimer() async {
        let timer = SQSource.makeTimerSource(queue: SQSerialQueue(label: "timer-events"))
        timer.schedule(deadline: .now(), repeating: .milliseconds(1))
        var fires: UInt = 0
        var batches = 0
        for await batch in timer.events {
            fires += batch
            batches += 1
            if fires >= 5 {
                break
            }
        }
        #expect(fires >= 5)
        #expect(batches >= 1)
        #expect(timer.isCancelled)
    }

    @Test func testUserDataMergesWhileTheLoopIsBusy() async {
        // Everything added is seen exactly once, however the adds and the loop interleave.
        let source = SQSource.makeUserDataAddSource(queue: SQSerialQueue(label: "add-events"))
        let adds = 2_000
        var sum: UInt = 0
        var batches = 0
        let producer = Task.detached {
            for _ in 0..<adds {
                source.add(data: 1)
            }
        }
        for await batch in source.events {
            sum += batch
            batches += 1
            if batches % 7 == 0 {
                busyWork()  // a slow consumer: adds coalesce in the suspended source
            }
            if sum >= UInt(adds) {
                break
            }
        }
        await producer.value
        #expect(sum == UInt(adds))
        #expect(source.isCancelled)
    }

    @Test func testEventsBeforeTheFirstNextAreKept() async {
        let source = SQSource.makeUserDataOrSource(queue: SQSerialQueue(label: "or-events"))
        var events = source.events.makeAsyncIterator()  // activates the source
        source.or(data: 0b01)
        source.or(data: 0b10)
        var seen: UInt = 0
        while seen != 0b11, let batch = await events.next() {
            seen |= batch
        }
        #expect(seen == 0b11)
    }

    @Test func testTaskCancellationEndsTheLoopAndCancelsTheSource() async {
        // A timer that never fires: only cancellation can end the loop.
        let timer = SQSource.makeTimerSource(queue: SQSerialQueue(label: "never-fires"))
        timer.schedule(deadline: .distantFuture, repeating: .never)
        let started = SQSemaphore(value: 0)
        let loop = Task {
            var batches = 0
            started.signal()
            for await _ in timer.events {
                batches += 1
            }
            return batches
        }
        try? await started.waitForSignal()
        loop.cancel()
        #expect(await loop.value == 0)
        #expect(timer.isCancelled)
    }

    /// A loop over a source that is already cancelled ends at once: one cancelled after it was
    /// activated, and one whose earlier loop ended with `break` (which cancels it). Both hung.
    @Test(.timeLimit(.minutes(1))) func testEventsOfACancelledSourceEndAtOnce() async {
        let activated = SQSource.makeUserDataAddSource(queue: SQSerialQueue(label: "cancelled"))
        activated.activate()
        activated.cancel()
        var batches = 0
        for await _ in activated.events {
            batches += 1
        }
        #expect(batches == 0)

        let looped = SQSource.makeUserDataAddSource(queue: SQSerialQueue(label: "looped"))
        looped.add(data: 1)
        for await _ in looped.events {
            break
        }
        #expect(looped.isCancelled)
        for await _ in looped.events {
            batches += 1
        }
        #expect(batches == 0)
    }

    @Test func testCancellingTheSourceEndsTheLoop() async {
        let source = SQSource.makeUserDataAddSource(queue: SQSerialQueue(label: "cancel-ends"))
        let loop = Task {
            var sum: UInt = 0
            for await batch in source.events {
                sum += batch
            }
            return sum
        }
        source.add(data: 3)
        source.cancel()
        // Whether or not the add arrived before the cancel, the loop ends.
        let sum = await loop.value
        #expect(sum == 0 || sum == 3)
    }

    @Test func testReadSourceEvents() async throws {
        let pipe = makePipe()
        defer { close(pipe.write) }
        let source = try SQSource.makeReadSource(
            fileDescriptor: pipe.read, queue: SQSerialQueue(label: "read-events"))
        source.setCancelHandler { close(pipe.read) }
        let message: [UInt8] = Array("hello".utf8)
        let written = message.withUnsafeBytes { write(pipe.write, $0.baseAddress, $0.count) }
        #expect(written == message.count)
        var received: [UInt8] = []
        for await available in source.events {
            #expect(available > 0)
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = read(pipe.read, &buffer, buffer.count)
            if count > 0 {
                received += buffer.prefix(count)
            }
            if received.count >= message.count {
                break
            }
        }
        #expect(received == message)
        #expect(source.isCancelled)
    }

    /// Each element of a read source counts bytes that are still there when the body reads
    /// them. The source was resumed as the loop took an element, and looked at the pipe again
    /// before the body had read: the same bytes came a second time, and a body reading what an
    /// element said found nothing (EAGAIN here; on a blocking descriptor it waited for ever).
    /// The body lets the source's queue take a turn before it reads (a second delivery of the
    /// same bytes is made by then), and the writer writes each chunk once the body has read the
    /// one before: no sleep sets the pace.
    @Test(.timeLimit(.minutes(1))) func testReadSourceElementsAreNotDeliveredTwice() async throws {
        let pipe = makePipe()
        #expect(fcntl(pipe.read, F_SETFL, fcntl(pipe.read, F_GETFL) | O_NONBLOCK) == 0)
        let queue = SQSerialQueue(label: "read-elements")
        let source = try SQSource.makeReadSource(fileDescriptor: pipe.read, queue: queue)
        source.setCancelHandler { close(pipe.read) }
        let chunks = 40
        let chunk = 100
        let writer = SQGroup()
        let readOne = SQSemaphore(value: 0)
        SQQueue.global().async(group: writer) {
            let bytes = [UInt8](repeating: 7, count: chunk)
            for _ in 0..<chunks {
                readOne.wait()
                _ = bytes.withUnsafeBytes { write(pipe.write, $0.baseAddress, $0.count) }
            }
        }
        readOne.signal()  // the first chunk
        var total = 0
        var elements = 0
        var buffer = [UInt8](repeating: 0, count: chunks * chunk)
        for await available in source.events {
            elements += 1
            try await queue.run {}
            let count = read(pipe.read, &buffer, Int(available))
            #expect(
                count == Int(available),
                "element \(elements): \(available) bytes readable, read gave \(count)")
            total += max(count, 0)
            if total >= chunks * chunk {
                break
            }
            readOne.signal()
        }
        #expect(total == chunks * chunk)
        try await writer.waitUntilEmpty()
        close(pipe.write)
    }

    @Test func testProcessEventsAreTyped() async throws {
        let pid = spawnTrue()
        let source = try SQSource.makeProcessSource(
            identifier: pid, eventMask: .exit, queue: SQSerialQueue(label: "process-events"))
        var seen: SQSource.ProcessEvent = []
        for await event in source.events {
            seen.formUnion(event)
            break
        }
        #expect(seen == .exit)
        reap(pid)
    }
}
