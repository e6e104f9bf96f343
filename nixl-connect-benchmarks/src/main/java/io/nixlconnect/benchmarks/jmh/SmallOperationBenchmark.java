package io.nixlconnect.benchmarks.jmh;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadOperation;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One complete small operation with both sides in this JVM, on the embedded transport: the passive side
 * creates a ReadableOperation and its metadata JSON, the active side parses it, reads 4 KiB and waits,
 * the passive side completes. Both connectors, their server and worker threads live here, so
 * {@code -prof gc}'s {@code gc.alloc.rate.norm} (JMH sums the allocation of all threads) is the heap
 * allocated per operation by both sides together, steady state. Buffers are registered once, as a
 * serving worker's are.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx512m", "--enable-native-access=ALL-UNNAMED"})
public class SmallOperationBenchmark {

    /** {@code true}: same-host copy (cross-memory attach) where the OS allows it; {@code false}: TCP. */
    @Param({"true", "false"})
    public boolean sameHostCopy;

    private Connector passive;
    private Connector active;
    private Descriptor source;
    private Descriptor target;

    @Setup(Level.Trial)
    public void setUp() {
        passive = new Connector(options("small-op-passive"));
        active = new Connector(options("small-op-active"));
        source = Descriptor.allocate(4096);
        target = Descriptor.allocate(4096);
        source.registerMemory(passive);
        target.registerMemory(active);
    }

    private ConnectorOptions options(String workerId) {
        return ConnectorOptions.builder().workerId(workerId)
                .transports(EmbeddedSettings.defaults().withSameHostCopy(sameHostCopy)).build();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        active.close();
        passive.close();
        source.close();
        target.close();
    }

    @Benchmark
    public ReadableOperation completeOperation() {
        ReadableOperation readable = passive.createReadable(source);
        String json = readable.metadata().toJson();
        ReadOperation read = active.beginRead(RdmaMetadata.fromJson(json), target);
        read.waitForCompletion();
        readable.waitForCompletion();
        return readable;
    }
}
