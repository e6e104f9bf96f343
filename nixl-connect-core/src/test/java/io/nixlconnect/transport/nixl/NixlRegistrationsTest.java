package io.nixlconnect.transport.nixl;

import ch.qos.logback.classic.Level;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The regions registered with an agent, through registrations of the test's own (the agent's stay empty), each call
 * under the agent's lifecycle lock as the agent makes it. NIXL's refusal to deregister (twice, or what it never
 * registered) would show as a warning.
 */
class NixlRegistrationsTest {

    @RegisterExtension
    final NixlAgents agents = new NixlAgents();
    private NixlAgentCore core;
    private NixlRegistrations registrations;
    private final Memory memory = new Memory(8192);
    private AgentLogCapture logs;

    @BeforeEach
    void openAgent() {
        core = agents.open("registrations-test");
        registrations = new NixlRegistrations(core);
        logs = new AgentLogCapture(Level.WARN);
    }

    @AfterEach
    void closeAgent() {
        logs.close();
        if (core != null) {
            NixlAgents.releaseAll(core, registrations);
        }
    }

    private <T> T locked(Supplier<T> call) {
        return NixlAgents.underReadLock(core, call);
    }

    private MemoryRegion region(long offset, long length) {
        return new MemoryRegion(Pointer.nativeValue(memory) + offset, length, MemoryType.DRAM, 0);
    }

    private long warnings() {
        return logs.warnings(core.name());
    }

    @Test
    void aRegisteredRegionIsFoundByExactlyThatRegion() {
        MemoryRegion region = region(0, 4096);
        NixlRegistration registration = locked(() -> registrations.register(region));
        assertThat(registration.isEmpty()).isFalse();
        assertThat(registrations.count()).isEqualTo(1);
        assertThat(registrations.of(region)).isSameAs(registration);
        assertThat(registrations.of(region(0, 1024))).as("a part of it is another region").isNull();
    }

    @Test
    void aZeroLengthRegionGetsARegistrationNixlNeverSees() {
        MemoryRegion empty = region(0, 0);
        NixlRegistration registration = locked(() -> registrations.register(empty));
        assertThat(registration.isEmpty()).isTrue();
        assertThat(registrations.count()).isZero();
        assertThat(registrations.of(empty)).isNull();
        registration.close();
        assertThat(warnings()).isZero();
    }

    @Test
    void deregisteringForgetsTheRegistrationAndASecondTimeDoesNothing() {
        MemoryRegion region = region(0, 4096);
        NixlRegistration registration = locked(() -> registrations.register(region));
        for (int i = 0; i < 2; i++) {
            locked(() -> {
                registrations.deregister(registration, registration.dlist());
                return null;
            });
            assertThat(registrations.count()).isZero();
            assertThat(registrations.of(region)).isNull();
        }
        assertThat(warnings()).as("deregistered from NIXL once").isZero();
        // The memory can be registered again.
        assertThat(locked(() -> registrations.register(region)).isEmpty()).isFalse();
    }

    @Test
    void releasingAllMarksEachRegistrationReleasedSoThatItsCloseDeregistersNothing() {
        NixlRegistration first = locked(() -> registrations.register(region(0, 4096)));
        NixlRegistration second = locked(() -> registrations.register(region(4096, 4096)));
        NixlAgents.releaseAll(core, registrations);
        assertThat(registrations.count()).isZero();
        assertThat(registrations.of(region(0, 4096))).isNull();
        assertThat(first.toString()).contains("released");
        assertThat(second.toString()).contains("released");
        first.close();
        second.close();
        assertThat(warnings()).isZero();
    }
}
