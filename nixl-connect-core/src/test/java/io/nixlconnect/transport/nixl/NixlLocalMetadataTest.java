package io.nixlconnect.transport.nixl;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/** An agent's metadata, all of it or only some registrations' sections, read under its lifecycle lock. */
class NixlLocalMetadataTest {

    @RegisterExtension
    final NixlAgents agents = new NixlAgents();
    private NixlAgentCore core;
    private NixlRegistrations registrations;
    private NixlLocalMetadata metadata;
    private final Memory memory = new Memory(3 * 4096);
    private MemoryRegion first;
    private MemoryRegion second;

    @BeforeEach
    void agentWithTwoRegistrations() {
        core = agents.open("metadata-test");
        registrations = new NixlRegistrations(core);
        metadata = new NixlLocalMetadata(core, registrations);
        first = region(0);
        second = region(1);
        locked(() -> registrations.register(first));
        locked(() -> registrations.register(second));
    }

    @AfterEach
    void closeAgent() {
        if (core != null) {
            NixlAgents.releaseAll(core, registrations);
        }
    }

    private MemoryRegion region(int page) {
        return new MemoryRegion(Pointer.nativeValue(memory) + page * 4096L, 4096, MemoryType.DRAM, 0);
    }

    private <T> T locked(Supplier<T> call) {
        return NixlAgents.underReadLock(core, call);
    }

    /** The addresses of the regions a blob describes, as a peer's validation reads them. */
    private List<Long> addresses(byte[] blob) {
        NixlMetadataFormat.Parsed parsed = NixlMetadataFormat.validate(blob);
        assertThat(parsed.agent()).isEqualTo(core.name());
        return parsed.regions().stream().map(NixlMetadataFormat.Region::address).toList();
    }

    @Test
    void describesOnlyTheGivenRegistrationsWithTheAgentsConnectionInfo() {
        assertThat(addresses(locked(metadata::full))).containsExactlyInAnyOrder(first.address(), second.address());
        assertThat(addresses(locked(() -> metadata.describing(List.of(first))))).containsExactly(first.address());
        assertThat(addresses(locked(() -> metadata.describing(List.of(second, first)))))
                .containsExactlyInAnyOrder(first.address(), second.address());
        byte[] none = locked(() -> metadata.describing(List.of()));
        assertThat(addresses(none)).isEmpty();
        assertThat(NixlMetadataFormat.connectionPart(none)).as("the connection info, read once")
                .isEqualTo(NixlMetadataFormat.connectionPart(locked(metadata::full)));
    }

    @Test
    void aRegionWithoutARegistrationGetsTheFullMetadata() {
        MemoryRegion unregistered = region(2);
        assertThat(addresses(locked(() -> metadata.describing(List.of(first, unregistered)))))
                .containsExactlyInAnyOrder(first.address(), second.address());
    }

    @Test
    void zeroLengthRegionsAreSkipped() {
        MemoryRegion empty = new MemoryRegion(0, 0, MemoryType.DRAM, 0);
        assertThat(locked(() -> metadata.describing(List.of(empty, first))))
                .isEqualTo(locked(() -> metadata.describing(List.of(first))));
    }

    @Test
    void eachRegistrationsSectionsAreReadFromNixlOnce() {
        NixlRegistration registration = registrations.of(first);
        assertThat(registration.sections()).isNull();
        locked(() -> metadata.describing(List.of(first)));
        List<NixlMetadataFormat.Section> sections = registration.sections();
        assertThat(sections).hasSize(1);
        locked(() -> metadata.describing(List.of(first, second)));
        assertThat(registration.sections()).isSameAs(sections);
    }
}
