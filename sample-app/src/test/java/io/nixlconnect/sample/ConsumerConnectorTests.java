package io.nixlconnect.sample;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.nixlconnect.Connector;
import io.nixlconnect.ConnectorOptions;
import io.nixlconnect.autoconfigure.observation.NixlConnectMeterBinder;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/** The consumer's connector in each role: the application's, or one of its own beside the producer's. */
class ConsumerConnectorTests {

    @Test
    void ownConnectorIsAnotherWorkerOnTheProducersBackendOnAFreePortAndClosesAlone() throws Exception {
        int fixedPort;
        try (ServerSocket probe = new ServerSocket(0)) {
            fixedPort = probe.getLocalPort();
        }
        try (Connector producer = new Connector(ConnectorOptions.builder().workerId("producer")
                .transports(EmbeddedSettings.defaults().withPort(fixedPort)).build())) {
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            Connector own;
            try (ConsumerConnector consumer = ConsumerConnector.beside(producer, registry)) {
                own = consumer.connector();
                assertThat(consumer.ownsConnector()).isTrue();
                assertThat(own).isNotSameAs(producer);
                assertThat(own.name()).isEqualTo("producer-consumer");
                assertThat(own.backendName()).isEqualTo(producer.backendName());
                assertThat(own.options().operationTimeout()).isEqualTo(producer.options().operationTimeout());
                assertThat(registry.find(NixlConnectMeterBinder.TRANSFER_BYTES)
                        .tag(NixlConnectMeterBinder.NAME_TAG, ConsumerConnector.METER_NAME).counters()).isNotEmpty();
            }
            assertThat(own.isServing()).isFalse();
            assertThat(producer.isServing()).isTrue();
        }
    }

    @Test
    void sharedConnectorIsTheApplicationsAndStaysOpen() {
        try (Connector application = new Connector(ConnectorOptions.builder()
                .transports(EmbeddedSettings.defaults()).build())) {
            try (ConsumerConnector consumer = ConsumerConnector.shared(application)) {
                assertThat(consumer.connector()).isSameAs(application);
                assertThat(consumer.ownsConnector()).isFalse();
            }
            assertThat(application.isServing()).isTrue();
        }
    }
}
