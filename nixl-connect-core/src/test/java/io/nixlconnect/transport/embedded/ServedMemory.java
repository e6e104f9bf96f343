package io.nixlconnect.transport.embedded;

import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryRegistration;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.TransferOp;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;

/** An embedded transport serving one window over a direct buffer, driven through the transport SPI. */
final class ServedMemory implements AutoCloseable {

    private static final SecureRandom RANDOM = new SecureRandom();

    final EmbeddedTransport transport;
    final EmbeddedAgent agent;
    final ByteBuffer buffer;
    final long address;
    final byte[] credential = newCredential();
    final MemoryRegistration registration;
    final PassiveWindow window;

    ServedMemory(EmbeddedSettings settings, String agentName, TransferOp access, byte[] content) {
        transport = EmbeddedTransport.open(settings);
        agent = (EmbeddedAgent) transport.createAgent(agentName);
        buffer = ByteBuffer.allocateDirect(content.length);
        buffer.put(content).flip();
        address = NativeMemory.addressOf(buffer);
        MemoryRegion region = new MemoryRegion(address, content.length, MemoryType.DRAM, 0);
        registration = agent.registerMemory(region);
        window = agent.openWindow(access, List.of(region), credential);
    }

    static EmbeddedSettings loopback() {
        return EmbeddedSettings.defaults();
    }

    static byte[] newCredential() {
        byte[] bits = new byte[16];
        RANDOM.nextBytes(bits);
        return RawPeer.utf8(HexFormat.of().formatHex(bits));
    }

    int port() {
        return transport.port();
    }

    byte[] content() {
        return NativeMemory.copyOut(address, buffer.capacity());
    }

    @Override
    public void close() {
        window.close();
        registration.close();
        transport.close();
    }
}
