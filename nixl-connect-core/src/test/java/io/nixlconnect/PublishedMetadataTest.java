package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.transport.TransportAgent;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a passive operation publishes: encoded once per agent metadata, never decoded again on the way out. */
class PublishedMetadataTest {

    @Test
    void passiveOperationsShareOneEncodingOfUnchangedAgentMetadata() {
        try (Connector connector = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults()).build());
             Descriptor a = Descriptor.allocate(8); Descriptor b = Descriptor.allocate(8);
             ReadableOperation first = connector.createReadable(a);
             WritableOperation second = connector.createWritable(b)) {
            assertThat(second.metadata().nixlMetadata()).isSameAs(first.metadata().nixlMetadata());
            assertThat(first.metadata().decodeNixlMetadata()).isEqualTo(connector.connection().metadata());
            // and it is exactly what decoding the published text gives a peer
            assertThat(RdmaMetadata.fromJson(first.metadata().toJson()).decodeNixlMetadata())
                    .isEqualTo(first.metadata().decodeNixlMetadata());
        }
    }

    @Test
    void theEmbeddedAgentTellsWhetherItsMetadataChangedWithoutACopy() {
        try (Connector connector = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults()).build())) {
            TransportAgent agent = connector.connection().agent();
            byte[] current = agent.localMetadata();
            assertThat(agent.localMetadataEquals(current)).isTrue();
            current[current.length - 1] ^= 1;
            assertThat(agent.localMetadataEquals(current)).isFalse();
            assertThat(agent.localMetadataEquals(new byte[0])).isFalse();
        }
    }

    @Test
    void ofKeepsItsOwnCopyOfTheAgentMetadata() {
        byte[] agent = "agent metadata".getBytes();
        RdmaMetadata metadata = RdmaMetadata.of(List.of(new SerializedDescriptor("cpu", 4096, 8)), agent, "k",
                OperationKind.READ);
        agent[0] = 'X';
        assertThat(metadata.decodeNixlMetadata()).isEqualTo("agent metadata".getBytes());
        assertThat(RdmaMetadata.fromJson(metadata.toJson())).isEqualTo(metadata);
    }

    @Test
    void ofRefusesEmptyAgentMetadataNamingTheField() {
        assertThatThrownBy(() -> RdmaMetadata.of(List.of(new SerializedDescriptor("cpu", 4096, 8)), new byte[0], "k",
                OperationKind.READ)).isInstanceOf(InvalidMetadataException.class).hasMessageContaining("'nixl_metadata'");
    }

    @Test
    void peerMetadataOverTheConnectorLimitIsRefusedBeforeLoading() {
        try (Connector connector = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults())
                .maxMetadataSize(1024).build())) {
            assertThatThrownBy(() -> connector.connection().loadRemote(new byte[1025]))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxMetadataSize");
            assertThat(connector.remoteAgentCount()).isZero();
        }
    }
}
