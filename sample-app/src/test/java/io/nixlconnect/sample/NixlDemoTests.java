package io.nixlconnect.sample;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.Connector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * The README's demo (role both, one process) on the NIXL backend, which refuses a connector's own metadata: the
 * consumer must read and write with a connector of its own. Runs where NIXL is set up ({@code .ci/nixl-setup.sh},
 * as scripts/test.sh does; CI fails without it).
 */
@EnabledIfEnvironmentVariable(named = "NIXL_LIBRARY_DIR", matches = ".+",
        disabledReason = "NIXL_LIBRARY_DIR is not set: run `eval \"$(.ci/nixl-setup.sh)\"` to run the demo on NIXL")
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"nixl.connect.backend=nixl", "sample.device=cpu", "sample.tensor-size=8MB",
                "sample.run-demo=false", "sample.exit-after-demo=false"})
class NixlDemoTests {

    @Autowired
    DemoClient demo;

    @Autowired
    Connector producer;

    @Autowired
    ConsumerConnector consumer;

    @Test
    void oneProcessDemoReadsAndWritesOnNixl() {
        DemoResult result = demo.run();

        assertThat(result.ok()).as(String.join("\n", result.lines())).isTrue();
        assertThat(result.backend()).isEqualTo("nixl");
        assertThat(producer.backendName()).isEqualTo("nixl");
        assertThat(consumer.ownsConnector()).isTrue();
        assertThat(result.worker()).isEqualTo(producer.name() + "-consumer");
        assertThat(result.transferredBytes()).isEqualTo(2L * (8L << 20));
        assertThat(result.lines()).contains("result: OK");
    }
}
