package io.nixlconnect.dynamo;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What a test started (runtimes, Python processes, etcd), closed after it, the last started first:
 * {@code @RegisterExtension final ClosedAfterEach closed = new ClosedAfterEach();} then {@code closed.later(x)}.
 * Every one is closed even when one fails to close; the first failure is thrown. Public, in this module's test jar,
 * for the sample app's Dynamo tests too.
 */
public final class ClosedAfterEach implements AfterEachCallback {

    private final List<AutoCloseable> started = new ArrayList<>();

    /** {@code closeable}, to be closed after the test, before what was started earlier. */
    public synchronized <T extends AutoCloseable> T later(T closeable) {
        started.add(0, closeable);
        return closeable;
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        List<AutoCloseable> closing;
        synchronized (this) {
            closing = List.copyOf(started);
            started.clear();
        }
        Exception failure = null;
        for (AutoCloseable closeable : closing) {
            try {
                closeable.close();
            } catch (Exception e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
