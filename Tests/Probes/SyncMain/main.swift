// SQProbeSyncMain: a program with a synchronous main that ends in `SQQueue.runMain()`.
// MainActorTests runs it as a child process: exit status 0 means every check passed; a check
// that fails exits with status 1 and a message; SIGALRM (the watchdog) means some work never
// ran.
//
//   SQProbeSyncMain mainactor   @MainActor work (from a task, from MainActor.run in a detached
//                               task, and DispatchQueue.main work) runs on the main thread
//                               while the main thread runs our main queue
//   SQProbeSyncMain actor       an actor on SQQueue.main runs there, exclusively with
//                               @MainActor work
//   SQProbeSyncMain notify      notifications onto .main with @MainActor closures (a group's,
//                               a work item's) run on the main thread
//   SQProbeSyncMain waitmain    misuse: the main thread waits for SQOperationQueue.main to
//                               empty, before runMain(): stops with a message
//   SQProbeSyncMain waitop      misuse: the same for one operation of SQOperationQueue.main

import Dispatch
import SwiftQueues
import Synchronization

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

func onMainThread() -> Bool {
    pthread_equal(pthread_self(), mainThread) != 0
}

func check(_ condition: Bool, _ message: String) {
    if !condition {
        print("SQProbeSyncMain: check failed: \(message)")
        exit(1)
    }
}

/// Counts the parts of a scenario that are done; the last one ends the process.
final class Parts: Sendable {
    private let left: Atomic<Int>

    init(_ count: Int) {
        left = Atomic(count)
    }

    func done() {
        if left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            exit(0)
        }
    }
}

@MainActor enum Shared {
    static var counter = 0
}

actor MainQueueActor {
    nonisolated var unownedExecutor: UnownedSerialExecutor {
        SQQueue.main.asUnownedSerialExecutor()
    }

    func onMainQueue() -> Bool {
        SQQueue.main.isIsolatingCurrentContext() == true && onMainThread()
    }
}

/// Main-actor state changed by notifications onto the main queue, written as code on the main
/// actor writes them with Dispatch (the closures use `self` without `assumeIsolated`).
@MainActor final class Model {
    var log: [String] = []
    let group = SQGroup()

    func start(_ parts: Parts) {
        group.enter()
        group.notify(queue: .main) {
            check(onMainThread(), "a group's notify onto .main runs on the main thread")
            self.log.append("group")
            parts.done()
        }
        let item = SQWorkItem { self_log_touch() }
        item.notify(queue: .main) {
            check(onMainThread(), "a work item's notify onto .main runs on the main thread")
            self.log.append("item")
            parts.done()
        }
        SQQueue.global().async {
            item.perform()
            self.group.leave()
        }
    }
}

/// A work item's body: nothing of the main actor.
func self_log_touch() {}

switch CommandLine.arguments.dropFirst().first ?? "" {
case "mainactor":
    let parts = Parts(4)
    Task { @MainActor in
        check(onMainThread(), "a @MainActor task runs on the main thread")
        Shared.counter += 1
        parts.done()
    }
    Task.detached {
        for _ in 0..<100 {
            await MainActor.run {
                check(onMainThread(), "MainActor.run runs on the main thread")
                Shared.counter += 1
            }
        }
        parts.done()
    }
    DispatchQueue.main.async {
        check(onMainThread(), "DispatchQueue.main work runs on the main thread")
        parts.done()
    }
    SQQueue.main.async {
        check(onMainThread(), "SQQueue.main work runs on the main thread")
        MainActor.assumeIsolated {
            Shared.counter += 1
        }
        parts.done()
    }
case "actor":
    let parts = Parts(2)
    let actor = MainQueueActor()
    Task.detached {
        for _ in 0..<100 {
            let ok = await actor.onMainQueue()
            check(ok, "an actor on SQQueue.main runs on the main queue, on the main thread")
        }
        parts.done()
    }
    Task.detached {
        for _ in 0..<100 {
            await MainActor.run { Shared.counter += 1 }
        }
        parts.done()
    }
case "notify":
    let parts = Parts(2)
    MainActor.assumeIsolated {
        Model().start(parts)
    }
case "waitmain":
    // Misuse: the main thread waits for SQOperationQueue.main, whose operations it runs.
    SQOperationQueue.main.addOperation { print("ran") }
    SQOperationQueue.main.waitUntilAllOperationsAreFinished()
    print("SQProbeSyncMain: the wait returned")
    exit(1)
case "waitop":
    let operation = SQBlockOperation { print("ran") }
    SQOperationQueue.main.addOperation(operation)
    operation.waitUntilFinished()
    print("SQProbeSyncMain: the wait returned")
    exit(1)
default:
    print("usage: SQProbeSyncMain mainactor|actor|notify|waitmain|waitop")
    exit(2)
}

SQQueue.runMain()
