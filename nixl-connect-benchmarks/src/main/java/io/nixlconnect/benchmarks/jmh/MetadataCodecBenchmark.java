package io.nixlconnect.benchmarks.jmh;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.OperationKind;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.SerializedDescriptor;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The metadata a small operation sends: building it ({@code RdmaMetadata.of}: zlib + base64 of the agent
 * metadata), JSON out, JSON in, and the peer's agent metadata back out of it (base64 + inflate). The agent
 * metadata is a real embedded agent's. Run with {@code -prof gc} for the bytes allocated per call.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx512m", "--enable-native-access=ALL-UNNAMED"})
public class MetadataCodecBenchmark {

    private Connector connector;
    private Descriptor buffer;
    private byte[] agentMetadata;
    private List<SerializedDescriptor> descriptors;
    private RdmaMetadata metadata;
    private String json;

    @Setup(Level.Trial)
    public void setUp() {
        connector = new Connector(ConnectorOptions.builder().workerId("codec-bench").transports(EmbeddedSettings.defaults()).build());
        buffer = Descriptor.allocate(4096);
        try (ReadableOperation readable = connector.createReadable(buffer)) {
            metadata = readable.metadata();
        }
        agentMetadata = metadata.decodeNixlMetadata();
        descriptors = metadata.descriptors();
        json = metadata.toJson();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        connector.close();
        buffer.close();
    }

    /** The passive side's metadata: descriptors, compressed and encoded agent metadata, key, kind. */
    @Benchmark
    public RdmaMetadata build() {
        return RdmaMetadata.of(descriptors, agentMetadata, metadata.notificationKey(), OperationKind.READ);
    }

    @Benchmark
    public String toJson() {
        return metadata.toJson();
    }

    /** What the active side does with the JSON it received: parse and validate. */
    @Benchmark
    public RdmaMetadata fromJson() {
        return RdmaMetadata.fromJson(json);
    }

    /** The peer's agent metadata out of its envelope (base64, bounded inflate). */
    @Benchmark
    public byte[] decodeAgentMetadata() {
        return RdmaMetadata.fromJson(json).decodeNixlMetadata();
    }
}
