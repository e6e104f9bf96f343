package io.nixlconnect;

/**
 * JUnit tags of the tests that need more than this JVM, so that one kind can be run or left out:
 * {@code ./mvnw test -Dgroups=python-interop}, {@code ./mvnw test -DexcludedGroups=cross-process,gpu}.
 */
public final class TestTags {

    /** Starts another process (a peer JVM, a Python worker) and moves bytes to or from it. */
    public static final String CROSS_PROCESS = "cross-process";
    /** Runs the peer in its own network namespace, so bytes cross a (virtual) link between two hosts. */
    public static final String TWO_HOST = "two-host";
    /** Talks to a Python Dynamo-style worker through NIXL's Python bindings. */
    public static final String PYTHON_INTEROP = "python-interop";
    /** Drives the NIXL native library. */
    public static final String NIXL = "nixl";
    /** Uses a CUDA GPU when the machine has one (skipped, with the reason, when it has not). */
    public static final String GPU = "gpu";
    /**
     * Asserts on time or CPU use, which a shared machine cannot promise: left out of a plain {@code mvn test}
     * (the build's {@code tests.excluded} property), run on their own with
     * {@code ./mvnw -pl nixl-connect-core test -Dtests.excluded= -Dgroups=performance}.
     */
    public static final String PERFORMANCE = "performance";

    private TestTags() {
    }
}
