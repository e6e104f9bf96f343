package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.TransportException;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.TransportUnavailableException;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import io.nixlconnect.transport.nixl.NixlSettings;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Settings choose the transport: the preference list, its default, and what each kind of failure does. */
class TransportChoiceTest {

    /** Settings of a backend that is never installed here; records how often it was tried. */
    private record Missing(String name, List<String> tried) implements TransportSettings {
        @Override
        public Transport open() {
            tried.add(name);
            throw new TransportUnavailableException(name + " is not installed", null);
        }
    }

    /** Settings of a backend that is installed but cannot start. */
    private record Broken(String name) implements TransportSettings {
        @Override
        public Transport open() {
            throw new TransportException(name + " could not start");
        }
    }

    @Test
    void theDefaultPreferenceIsEveryBackendNixlFirstWithItsOwnDefaults() {
        List<TransportSettings> defaults = ConnectorOptions.builder().build().transports();
        assertThat(defaults).containsExactly(NixlSettings.defaults(), EmbeddedSettings.defaults());
    }

    @Test
    void anUnavailableTransportIsSkippedForTheNextOne() {
        List<String> tried = new ArrayList<>();
        try (Connector connector = new Connector(ConnectorOptions.builder()
                .transports(new Missing("first", tried), EmbeddedSettings.defaults()).build())) {
            assertThat(tried).containsExactly("first");
            assertThat(connector.backendName()).isEqualTo("embedded");
            assertThat(connector.isServing()).isTrue();
        }
    }

    @Test
    void theLastUnavailableTransportIsReportedByName() {
        List<String> tried = new ArrayList<>();
        assertThatThrownBy(() -> new Connector(ConnectorOptions.builder()
                .transports(new Missing("a", tried), new Missing("b", tried)).build()))
                .isInstanceOf(BackendUnavailableException.class).isInstanceOf(NixlConnectException.class)
                .hasMessageContaining("Transport 'b' was requested but cannot be used: b is not installed")
                .satisfies(e -> assertThat(((BackendUnavailableException) e).backend()).isEqualTo("b"));
        assertThat(tried).containsExactly("a", "b");
    }

    @Test
    void nixlThatCannotLoadIsUnavailableNamingWhatToSet() {
        assertThatThrownBy(() -> new Connector(ConnectorOptions.builder()
                .transports(NixlSettings.defaults().withLibraryDir(Path.of("/nowhere/at/all"))).build()))
                .isInstanceOf(BackendUnavailableException.class)
                .hasMessageContaining("NIXL cannot be used").hasMessageContaining("NIXL_PREFIX")
                .satisfies(e -> assertThat(((BackendUnavailableException) e).backend()).isEqualTo("nixl"));
    }

    @Test
    void aTransportThatFailsToStartIsNotSkipped() {
        assertThatThrownBy(() -> new Connector(ConnectorOptions.builder()
                .transports(new Broken("broken"), EmbeddedSettings.defaults()).build()))
                .isInstanceOf(TransportFailureException.class)
                .hasMessage("The broken transport failed to start: broken could not start")
                .satisfies(e -> assertThat(((TransportFailureException) e).backend()).isEqualTo("broken"))
                .cause().isInstanceOf(TransportException.class);
    }

    @Test
    void thePreferenceListMustNameATransport() {
        assertThatThrownBy(() -> ConnectorOptions.builder().transports(List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one transport");
        assertThatThrownBy(() -> ConnectorOptions.builder().transports((TransportSettings) null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no null");
        ConnectorOptions reset = ConnectorOptions.builder().transports(EmbeddedSettings.defaults())
                .transports((List<TransportSettings>) null).build();
        assertThat(reset.transports()).isEqualTo(ConnectorOptions.builder().build().transports());
    }

    @Test
    void optionsFindSettingsByType() {
        EmbeddedSettings embedded = EmbeddedSettings.defaults().withPort(0).withMaxConnectionsPerPeer(2);
        ConnectorOptions options = ConnectorOptions.builder().transports(embedded).build();
        assertThat(options.transport(EmbeddedSettings.class)).contains(embedded);
        assertThat(options.transport(NixlSettings.class)).isEmpty();
        assertThat(options.toBuilder().build().transports()).containsExactly(embedded);
    }

    @Test
    void embeddedSettingsCheckTheirValues() {
        EmbeddedSettings defaults = EmbeddedSettings.defaults();
        assertThat(defaults.bindAddress()).isEqualTo(EmbeddedSettings.DEFAULT_BIND_ADDRESS).isEqualTo("127.0.0.1");
        assertThat(defaults.port()).isZero();
        assertThat(defaults.advertisedAddress()).isNull();
        assertThat(defaults.maxConnectionsPerPeer()).isEqualTo(EmbeddedSettings.DEFAULT_MAX_CONNECTIONS_PER_PEER);
        assertThat(defaults.withAdvertisedAddress(" ").advertisedAddress()).isNull();
        assertThatThrownBy(() -> defaults.withBindAddress(" ")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bindAddress");
        assertThatThrownBy(() -> defaults.withPort(65536)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("port");
        assertThatThrownBy(() -> defaults.withMaxConnectionsPerPeer(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxConnectionsPerPeer");
    }
}
