package io.nixlconnect.sample;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/** Producer and consumer as two applications (the profiles of the two-process setup), on different ports. */
class TwoProcessesTests {

    @Test
    void consumerProfileRunsTheDemoAgainstAProducerProfile() {
        try (ConfigurableApplicationContext producer = new SpringApplicationBuilder(SampleApplication.class)
                .profiles("producer")
                .run("--server.port=0", "--sample.tensor-size=4MB")) {
            String port = producer.getEnvironment().getProperty("local.server.port");
            assertThat(producer.getBeanProvider(DemoRunner.class).getIfAvailable()).isNull();

            try (ConfigurableApplicationContext consumer = new SpringApplicationBuilder(SampleApplication.class)
                    .profiles("consumer")
                    .run("--sample.producer-url=http://127.0.0.1:" + port, "--sample.tensor-size=4MB",
                            "--sample.exit-after-demo=false")) {
                assertThat(consumer.getEnvironment().getProperty("local.server.port")).isNotEqualTo(port);
                assertThat(consumer.getBeanProvider(ProducerTensors.class).getIfAvailable()).isNull();
                DemoRunner runner = consumer.getBean(DemoRunner.class);
                DemoResult result = runner.result();
                assertThat(result).isNotNull();
                assertThat(result.ok()).as(String.join("\n", result.lines())).isTrue();
                assertThat(result.producerUrl()).isEqualTo("http://127.0.0.1:" + port);
                assertThat(result.worker()).isNotEqualTo(producer.getBean(io.nixlconnect.Connector.class).name());
                assertThat(result.transferredBytes()).isEqualTo(2L * (4L << 20));
                assertThat(runner.getExitCode()).isZero();
            }
        }
    }
}
