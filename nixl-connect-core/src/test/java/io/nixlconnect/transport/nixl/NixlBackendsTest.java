package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.TransportException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The backends of a bare native agent (no {@link NixlAgentCore}): created, refused, chosen and counted, freed. */
class NixlBackendsTest {

    /** Loads NIXL for the bare agents below, or skips. */
    @RegisterExtension
    final NixlAgents agents = new NixlAgents();
    private long agent;

    @BeforeEach
    void bareAgent() {
        long[] handle = new long[1];
        byte[] config = NixlCapi.agentConfig(false, 0, NixlCapi.THREAD_SYNC_STRICT);
        NixlAgentCore.check(NixlCapi.nixl_capi_create_configured_agent("backends-test-" + System.nanoTime(), config,
                handle), "create agent");
        agent = handle[0];
    }

    @AfterEach
    void destroyAgent() {
        if (agent != 0) {
            NixlCapi.nixl_capi_destroy_agent(agent);
        }
    }

    @Test
    void listsThePluginsNixlFound() {
        assertThat(NixlBackends.availablePlugins(agent)).contains("UCX", "POSIX");
    }

    @Test
    void theOneBackendThereIsIsTheChosenOneAndEachChoiceIsCounted() {
        NixlBackends backends = new NixlBackends(List.of("UCX"), Map.of());
        backends.create(agent);
        try {
            assertThat(backends.transfersByBackend()).isEmpty();
            // With one backend NIXL is not asked (the request is not looked at): it can only have chosen that one.
            assertThat(backends.chosen(agent, 0)).isEqualTo("UCX");
            assertThat(backends.chosen(agent, 0)).isEqualTo("UCX");
            assertThat(backends.transfersByBackend()).isEqualTo(Map.of("UCX", 2L));
        } finally {
            backends.destroy();
        }
    }

    @Test
    void aPluginNixlDoesNotHaveIsRefusedNamingThoseItHasAndWhereItLooked() {
        NixlBackends backends = new NixlBackends(List.of("UCX", "NO_SUCH_PLUGIN"), Map.of());
        try {
            assertThatThrownBy(() -> backends.create(agent)).isInstanceOf(TransportException.class)
                    .hasMessageContaining("NIXL backend plugin 'NO_SUCH_PLUGIN' is not available")
                    .hasMessageContaining("available plugins: [").hasMessageContaining("UCX")
                    .hasMessageContaining("NIXL_PLUGIN_DIR");
        } finally {
            backends.destroy(); // the UCX backend created before the refusal
        }
    }
}
