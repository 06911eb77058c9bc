// SQProbeDispatchMain: programs ported from Dispatch by renaming types to SQ*, which still end in
// libdispatch's `dispatchMain()` (it compiles wherever Dispatch or Foundation is imported).
// dispatchMain() ends the main thread; libdispatch then runs its main queue (DispatchQueue.main
// and MainActor work) on a thread of its own, and SwiftQueues must run SQQueue.main there too,
// in turn with it. DispatchMainTests runs it as a child process: exit status 0 and a last line
// "ok ..." mean every check passed; 1 a failed check (with a message); SIGALRM (the watchdog)
// means some work never ran. The old code trapped (SIGILL in MainActor.assumeIsolated, on a
// pool thread) or let the two main queues' work overlap.
//
//   SQProbeDispatchMain result   an SQOperationQueue operation reports its result with
//                                SQQueue.main.async, which prints it and exits (the user's
//                                program, with its @MainActor closure)
//   SQProbeDispatchMain turns    SQOperationQueue.main operations and DispatchQueue.main work,
//                                queued before dispatchMain() (d1b_S): never at the same time,
//                                inside libdispatch's main queue, all on one thread
//   SQProbeDispatchMain mixed    the same with every way onto the two main queues (SQQueue.main
//                                async, asyncAfter and sync, operations, DispatchQueue.main,
//                                @MainActor tasks), before and after dispatchMain(), from the
//                                main thread and from pool threads; SQQueue.main work keeps its
//                                order, runs once each, and nothing runs after the last item

import Dispatch
import SwiftQueues

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The watchdog: work that never runs ends the probe (SIGALRM) instead of hanging the test.
var alarmOnly = sigset_t()
sigemptyset(&alarmOnly)
sigaddset(&alarmOnly, SIGALRM)
pthread_sigmask(SIG_UNBLOCK, &alarmOnly, nil)
alarm(60)

let mainThread = pthread_self()

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition {
        print("SQProbeDispatchMain: check failed: \(message())")
        exit(1)
    }
}

/// Set on libdispatch's main queue: a closure that reads it back runs inside that queue's work
/// (DispatchQueue.getSpecific looks at the running queue), which is where the main actor's
/// isolation holds after dispatchMain().
let onDispatchMainKey = DispatchSpecificKey<Int>()
DispatchQueue.main.setSpecific(key: onDispatchMainKey, value: 1)

func insideDispatchMainQueue() -> Bool {
    DispatchQueue.getSpecific(key: onDispatchMainKey) == 1
}

/// What the critical sections of the two main queues saw (behind a pthread mutex, as the tests'
/// `Locked`: the standard library's Mutex hands its lock over where ThreadSanitizer cannot see).
final class Record: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var inside = 0
    private var overlaps = 0
    private var sections = 0
    private var threads: Set<pthread_t> = []
    private var outsideDispatchMain = 0
    private var seen: Set<String> = []
    private var twice: [String] = []
    private var nextInOrder: [String: Int] = [:]
    private var outOfOrder: [String] = []
    private var ended = false
    private var afterEnd = 0
    private let expected: Int
    private let oneThread: Bool

    /// `expected`: how many critical sections make the whole run; the last one ends it.
    /// `oneThread`: whether they must all run on one thread. Every section must run inside
    /// libdispatch's main queue, so on the thread libdispatch runs it on at the time; but
    /// libdispatch may move its main queue to another of its threads when the queue goes idle
    /// and is woken from outside, as round trips do (a program on Dispatch alone, making
    /// DispatchQueue.main round trips from another thread, used two threads in 10 of 100 runs
    /// on a loaded machine). Work queued before dispatchMain keeps the queue busy throughout.
    init(expected: Int, oneThread: Bool) {
        self.expected = expected
        self.oneThread = oneThread
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// One critical section of main-queue work, item `index` of `kind` (each runs once). With
    /// `ordered`, the items of `kind` were queued from one thread in index order and must run
    /// in it. After the last expected section, checks everything and runs `finish`, still
    /// inside the section.
    func section(
        _ kind: String, _ index: Int, ordered: Bool = true, finish: () -> Void = {}
    ) {
        let onDispatchMain = insideDispatchMainQueue()
        locked {
            if ended {
                afterEnd += 1
            }
            inside += 1
            if inside > 1 {
                overlaps += 1
            }
            threads.insert(pthread_self())
            if !onDispatchMain {
                outsideDispatchMain += 1
            }
            if !seen.insert("\(kind) \(index)").inserted {
                twice.append("\(kind) \(index)")
            }
            if ordered {
                let next = nextInOrder[kind, default: 0]
                if index != next {
                    outOfOrder.append("\(kind) \(index) ran when \(next) was due")
                }
                nextInOrder[kind] = index + 1
            }
        }
        // Not a wait for anything: the section lasts a while, with the CPU free, so that
        // work of the other queue that could run beside it would (the overlap the old code
        // showed in 3,994 of 4,000 sections).
        usleep(200)
        let last = locked {
            inside -= 1
            sections += 1
            return sections == expected
        }
        if last {
            report()
            finish()
        }
    }

    /// Checks everything seen and prints the summary; exits with status 1 on a failure.
    private func report() {
        let (overlaps, outside, order, twice, threads, sections) = locked {
            ended = true
            return (
                self.overlaps, self.outsideDispatchMain, self.outOfOrder, self.twice,
                self.threads, self.sections
            )
        }
        print(
            "sections \(sections), overlaps \(overlaps), outside libdispatch's main queue "
                + "\(outside), out of order \(order.count), run twice \(twice.count), "
                + "threads \(threads.count)")
        check(overlaps == 0, "\(overlaps) critical sections overlapped")
        check(outside == 0, "\(outside) critical sections ran outside libdispatch's main queue")
        check(order.isEmpty, "out of order: \(order.prefix(5))")
        check(twice.isEmpty, "run twice: \(twice.prefix(5))")
        check(!threads.contains(mainThread), "work ran on the main thread, which dispatchMain ended")
        check(
            !oneThread || threads.count == 1,
            "the main queues' work ran on \(threads.count) threads")
    }

    /// After the last section: whether any began after it (none may: it ends the process from
    /// inside both main queues).
    func endedCleanly() -> Bool {
        locked { afterEnd == 0 }
    }
}

@MainActor enum MainActorState {
    static var count = 0
}

switch CommandLine.arguments.dropFirst().first ?? "" {
case "result":
    // d1_dispatchMain_S: the user's program after the rename.
    let queue = SQOperationQueue()
    queue.addOperation {
        let result = 6 * 7
        SQQueue.main.async {
            MainActorState.count += 1  // main-actor state: the closure is @MainActor
            check(insideDispatchMainQueue(), "SQQueue.main work runs inside libdispatch's main queue")
            print("result on main queue:", result)
            exit(0)
        }
    }
case "turns":
    // d1b_S: 2,000 rounds of an operation on SQOperationQueue.main and a DispatchQueue.main
    // closure, queued before dispatchMain(); the last section to end checks and exits.
    let rounds = 2000
    let record = Record(expected: 2 * rounds, oneThread: true)
    for i in 0..<rounds {
        SQOperationQueue.main.addOperation {
            record.section("SQOperationQueue.main", i) { exit(0) }
        }
        DispatchQueue.main.async {
            record.section("DispatchQueue.main", i) { exit(0) }
        }
    }
case "mixed":
    let rounds = 300
    // Per round: before dispatchMain, from the main thread: SQQueue.main.async, an operation,
    // DispatchQueue.main.async; after it, from a pool thread: the same three, a @MainActor task,
    // SQQueue.main.asyncAfter and SQQueue.main.sync (made one at a time from a serial queue:
    // each waits for its turn on the main queue).
    let record = Record(expected: rounds * 9, oneThread: false)
    let finish: @Sendable () -> Void = {
        // The last section: a closure queued now runs after exit() has begun if at all; it
        // must not (exit holds both main queues: this closure runs inside them).
        SQQueue.main.async { print("SQProbeDispatchMain: SQQueue.main work ran after exit()") }
        DispatchQueue.main.async { print("SQProbeDispatchMain: main-queue work ran after exit()") }
        exit(record.endedCleanly() ? 0 : 1)
    }
    // Signalled by the first SQQueue.main closure, which runs only once the main thread is gone.
    let orphaned = SQSemaphore(value: 0)
    for i in 0..<rounds {
        SQQueue.main.async {
            MainActorState.count += 1
            if i == 0 {
                orphaned.signal()
            }
            record.section("SQQueue.main before", i, finish: finish)
        }
        SQOperationQueue.main.addOperation {
            record.section("SQOperationQueue.main before", i, finish: finish)
        }
        DispatchQueue.main.async {
            record.section("DispatchQueue.main before", i, finish: finish)
        }
    }
    // After the main thread has gone, while the main queues still have work queued before.
    SQQueue.global().async {
        orphaned.wait()
        let syncs = SQSerialQueue(label: "syncs")
        for i in 0..<rounds {
            SQQueue.main.async {
                MainActorState.count += 1
                record.section("SQQueue.main after", i, finish: finish)
            }
            SQOperationQueue.main.addOperation {
                record.section("SQOperationQueue.main after", i, finish: finish)
            }
            DispatchQueue.main.async {
                record.section("DispatchQueue.main after", i, finish: finish)
            }
            Task { @MainActor in
                MainActorState.count += 1
                record.section("MainActor task", i, ordered: false, finish: finish)
            }
            SQQueue.main.asyncAfter(deadline: .now() + .milliseconds(i % 7)) {
                MainActorState.count += 1
                record.section("SQQueue.main.asyncAfter", i, ordered: false, finish: finish)
            }
            syncs.async {
                let count = SQQueue.main.sync {
                    record.section("SQQueue.main.sync", i, finish: finish)
                    return MainActorState.count
                }
                check(count > 0, "SQQueue.main.sync returns its closure's result")
            }
        }
    }
case "sync-inside":
    // SQQueue.main.sync from DispatchQueue.main work: it would wait for ever (its caller holds
    // libdispatch's main queue, where ours runs); it must stop with a message.
    DispatchQueue.main.async {
        SQQueue.main.sync { print("ran") }
        print("returned")
        exit(0)
    }
default:
    print("usage: SQProbeDispatchMain result|turns|mixed|sync-inside")
    exit(2)
}

dispatchMain()
