package io.nixlconnect.dynamo.internal;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/** The runtime's threads: daemon, named after what they do, so that a thread dump says which is which. */
public final class Threads {

    private Threads() {
    }

    public static ThreadFactory named(String prefix) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, prefix + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }

    public static ExecutorService cached(String prefix) {
        return Executors.newCachedThreadPool(named(prefix));
    }

    public static ScheduledExecutorService scheduler(String prefix) {
        ScheduledThreadPoolExecutor scheduler = new ScheduledThreadPoolExecutor(1, named(prefix));
        scheduler.setRemoveOnCancelPolicy(true);
        scheduler.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        return scheduler;
    }

    public static Thread start(String name, Runnable body) {
        Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        thread.start();
        return thread;
    }
}
