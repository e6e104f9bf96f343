package io.nixlconnect.benchmarks.jmh;

import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.Descriptor;
import io.nixlconnect.RdmaMetadata;
import io.nixlconnect.ReadableOperation;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.util.ArrayList;
import java.util.List;
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
import org.openjdk.jmh.annotations.Warmup;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectReader;
import tools.jackson.databind.json.JsonMapper;

/**
 * Parsing an operation's metadata alone, as the active side receives it: {@link RdmaMetadata#fromJson} on the
 * compact document nixl-connect and Python's pydantic write, on Python's spaced {@code json.dumps} form, and beside
 * it an application's cached Jackson 3 {@link ObjectReader} bound to {@code RdmaMetadata} (what a REST body goes
 * through) and the same reader into a bare {@link JsonNode} tree (Jackson's parse alone, no validation: the floor).
 * Every variant but the tree validates the document, the agent-metadata envelope included. One descriptor (a small
 * operation) and 1,024 (a KV-cache block list: every other 4 KiB block of one pool). Run with {@code -prof gc}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx512m", "--enable-native-access=ALL-UNNAMED"})
public class MetadataParseBenchmark {

    private static final JsonMapper MAPPER = JsonMapper.builder().build();
    private static final ObjectReader READER = MAPPER.readerFor(RdmaMetadata.class);
    private static final ObjectReader TREE_READER = MAPPER.readerFor(JsonNode.class);
    private static final int BLOCK_SIZE = 4096;

    @Param({"1", "1024"})
    public int descriptors;

    private String compact;
    private String spaced;

    @Setup(Level.Trial)
    public void setUp() {
        try (Connector connector = new Connector(ConnectorOptions.builder().workerId("parse-bench")
                .transports(EmbeddedSettings.defaults()).build());
                Descriptor pool = Descriptor.allocate(2L * descriptors * BLOCK_SIZE)) {
            List<Descriptor> blocks = new ArrayList<>(descriptors);
            for (int i = 0; i < descriptors; i++) {
                blocks.add(pool.slice((long) (2 * i + 1) * BLOCK_SIZE, BLOCK_SIZE));
            }
            try (ReadableOperation readable = connector.createReadable(blocks)) {
                compact = readable.metadata().toJson();
            }
        }
        spaced = compact.replace("\":", "\": ").replace(",\"", ", \"").replace(",{", ", {");
    }

    /** The compact document, as nixl-connect and Python's pydantic write it. */
    @Benchmark
    public RdmaMetadata fromJsonCompact() {
        return RdmaMetadata.fromJson(compact);
    }

    /** Python's {@code json.dumps} form: a space after every separator. */
    @Benchmark
    public RdmaMetadata fromJsonSpaced() {
        return RdmaMetadata.fromJson(spaced);
    }

    /** An application's own cached Jackson 3 reader, through the type's annotations. */
    @Benchmark
    public RdmaMetadata jacksonObjectReader() throws Exception {
        return READER.readValue(compact);
    }

    /** The same cached reader into a bare tree: Jackson's parse alone, nothing validated. */
    @Benchmark
    public JsonNode jacksonTree() throws Exception {
        return TREE_READER.readValue(compact);
    }
}
