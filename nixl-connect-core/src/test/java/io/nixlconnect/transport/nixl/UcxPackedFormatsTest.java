package io.nixlconnect.transport.nixl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.transport.InvalidAgentMetadataException;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The UCX worker address and remote keys inside NIXL's UCX section are checked before UCX unpacks them
 * (issue 12 item 2: mutated bytes there crashed the loading JVM in every campaign). Real blobs from the CI
 * wheel's UCX pass; each defect UCX would read past or index out of its tables with is refused, naming
 * the NIXL field and the part of the UCX blob.
 */
class UcxPackedFormatsTest {

    private static byte[] resource(String name) throws Exception {
        try (InputStream in = UcxPackedFormatsTest.class.getResourceAsStream("/nixl-agent-metadata/" + name)) {
            return in.readAllBytes();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"ucx-two-dram-regions.bin", "ucx-address-v1-all-transports.bin",
            "ucx-address-v2-all-transports.bin", "ucx-address-v1-debug-info.bin", "ucx-address-v2-debug-info.bin",
            "ucx-address-v1-tcp-self.bin", "ucx-address-v1-tcp-only.bin"})
    void realAgentMetadataFromUcxIsAccepted(String name) throws Exception {
        NixlMetadataFormat.Parsed parsed = NixlMetadataFormat.validate(resource(name));
        assertThat(parsed.regions()).hasSize(2);
    }

    // --- worker address ---

    /** Builds a packed UCX blob (worker address or remote key) byte by byte. */
    private static final class Packed {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        Packed u8(int... values) {
            for (int value : values) {
                out.write(value);
            }
            return this;
        }

        Packed bytes(int count) {
            for (int i = 0; i < count; i++) {
                out.write(0x11);
            }
            return this;
        }

        Packed v1AttributesWithBandwidth(float bandwidth) {
            ByteBuffer attributes = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
            attributes.putFloat(1e-9f).putFloat(bandwidth).putFloat(1e-7f).putInt(0x30);
            return u8(toInts(attributes.array()));
        }

        ByteBuffer buffer() {
            return ByteBuffer.wrap(out.toByteArray());
        }

        private static int[] toInts(byte[] bytes) {
            int[] values = new int[bytes.length];
            for (int i = 0; i < bytes.length; i++) {
                values[i] = bytes[i] & 0xff;
            }
            return values;
        }
    }

    /** Version 1 with a uuid; device md 0, 6-byte address; one transport, 4-byte iface address, one ep address. */
    private static Packed v1Address() {
        return new Packed().u8(0x20).bytes(8)            // header (uuid flag), uuid
                .u8(0x00, 0x80 | 6).bytes(6)                // md 0; last device, address length 6
                .u8(0x12, 0x34).v1AttributesWithBandwidth(1e9f)
                .u8(0x80 | 0x40 | 4).bytes(4)               // last transport, has ep address, iface address length 4
                .u8(3).bytes(3).u8(0x80);                   // ep address length 3, lane 0, last
    }

    private static String refusal(ByteBuffer address) {
        try {
            UcxPackedFormats.validateWorkerAddress(address, "Conns[0].c");
        } catch (InvalidAgentMetadataException e) {
            assertThat(e.field()).isEqualTo("Conns[0].c");
            return e.getMessage();
        }
        return null;
    }

    @Test
    void aWellFormedAddressIsAccepted() {
        assertThat(refusal(v1Address().buffer())).isNull();
        assertThat(refusal(new Packed().u8(0x01, 0x02).bytes(8).u8(0xff).buffer())).as("v2, no devices").isNull();
    }

    @Test
    void anAddressCutShortAnywhereIsRefused() {
        ByteBuffer whole = v1Address().buffer();
        for (int length = 0; length < whole.limit(); length++) {
            assertThat(refusal(whole.duplicate().limit(length))).as("cut at %d", length).contains("runs past the end");
        }
    }

    @Test
    void bytesAfterTheLastDeviceAreRefused() {
        assertThat(refusal(v1Address().u8(0).buffer())).contains("end 1 byte(s) follow");
    }

    @Test
    void unknownAddressVersionsAndHeaderFlagsAreRefused() {
        // UCX asserts on a version it does not know (abort, not an error).
        assertThat(refusal(new Packed().u8(0x02).bytes(8).u8(0xff).buffer())).contains("address version 2");
        assertThat(refusal(new Packed().u8(0x01, 0x10).bytes(8).u8(0xff).buffer())).contains("unknown bits 0x10");
    }

    @Test
    void aMemoryDomainIndexPastUcxsTablesIsRefused() {
        ByteBuffer address = new Packed().u8(0x01, 0x00)               // v2, no uuid
                .u8(0x7f, 64, 0x80 | 0).u8(0x12, 0x34).bytes(8)       // md extended to 64
                .u8(0x80).buffer();
        assertThat(refusal(address)).contains("device[0].md is memory domain 64");
    }

    @Test
    void aDeviceWithZeroPathsIsRefused() {
        ByteBuffer address = new Packed().u8(0x20).bytes(8).u8(0x80, 0x80 | 0x40 | 0).u8(0).buffer();
        assertThat(refusal(address)).contains("device[0].paths is 0");
    }

    @Test
    void versionOneAttributesUcxCannotUseAreRefused() {
        for (float bandwidth : new float[] {Float.NaN, Float.POSITIVE_INFINITY, 0f, -1e9f}) {
            ByteBuffer address = new Packed().u8(0x20).bytes(8).u8(0x00, 0x80).u8(0x12, 0x34)
                    .v1AttributesWithBandwidth(bandwidth).u8(0x80).buffer();
            assertThat(refusal(address)).as("bandwidth %s", bandwidth).contains("transport[0].attributes");
        }
        // A length byte shifted by one put -2.16e9 s into an overhead; with a local interface gone UCX crashed.
        ByteBuffer attributes = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putFloat(-2.16e9f).putFloat(1e9f)
                .putFloat(1e-7f).putInt(0x30);
        Packed shifted = new Packed().u8(0x20).bytes(8).u8(0x00, 0x80).u8(0x12, 0x34);
        for (byte b : attributes.array()) {
            shifted.u8(b & 0xff);
        }
        assertThat(refusal(shifted.u8(0x80).buffer())).contains("overhead -2.16E9");
    }

    @Test
    void moreEndpointAddressesThanUcxHasLanesAreRefused() {
        Packed address = new Packed().u8(0x20).bytes(8).u8(0x00, 0x80).u8(0x12, 0x34)
                .v1AttributesWithBandwidth(1e9f).u8(0x80 | 0x40);
        for (int i = 0; i < 65; i++) {
            address.u8(0, 0);
        }
        assertThat(refusal(address.buffer())).contains("endpoint[64] is past UCX's limit of 64");
    }

    @Test
    void moreTransportsThanUcxHasResourcesAreRefused() {
        Packed address = new Packed().u8(0x20).bytes(8).u8(0x00, 0x80);
        for (int i = 0; i < 129; i++) {
            address.u8(0x12, 0x34).v1AttributesWithBandwidth(1e9f).u8(0);
        }
        assertThat(refusal(address.buffer())).contains("transport[128] is past UCX's limit of 128");
    }

    /** One transport of the given name, with the given device and interface addresses, version 1. */
    private static ByteBuffer oneTransport(String name, int[] deviceAddress, int ifaceBytes) {
        int checksum = UcxPackedFormats.nameChecksum(name);
        return new Packed().u8(0x20).bytes(8).u8(0x01, 0x80 | deviceAddress.length).u8(deviceAddress)
                .u8(checksum & 0xff, checksum >>> 8).v1AttributesWithBandwidth(1e9f).u8(0x80 | ifaceBytes)
                .bytes(ifaceBytes).buffer();
    }

    @Test
    void ucxNameChecksumsMatchTheRealAddresses() {
        // The checksums UCX 1.23 packed into ucx-address-v1-all-transports.bin for these transports.
        assertThat(UcxPackedFormats.nameChecksum("tcp")).isEqualTo(0x19cf);
        assertThat(UcxPackedFormats.nameChecksum("self")).isEqualTo(0x7563);
    }

    @Test
    void addressesTheKnownTransportsReadAtFixedOffsetsMustHoldThoseBytes() {
        int[] ipv4 = {0x00, 0x02, 10, 0, 0, 1};
        assertThat(refusal(oneTransport("tcp", ipv4, 2))).isNull();
        // An empty interface address is a NULL pointer to UCX's tcp (crashed in uct_tcp_ep_set_dest_addr).
        assertThat(refusal(oneTransport("tcp", ipv4, 0))).contains("is 0 byte(s); UCX's tcp reads 2");
        assertThat(refusal(oneTransport("tcp", new int[0], 2))).contains("UCX's tcp reads 2");
        assertThat(refusal(oneTransport("tcp", new int[] {0x00, 0x0a, 1, 2, 3, 4}, 2))).as("IPv6 family, 4 bytes")
                .contains("UCX's tcp reads 18");
        assertThat(refusal(oneTransport("tcp", new int[] {0x00, 0x07, 1, 2, 3, 4}, 2))).contains("address family 7");
        int[] hostId = {1, 2, 3, 4, 5, 6, 7, 8};
        assertThat(refusal(oneTransport("cma", hostId, 4))).isNull();
        // An empty device address crashed UCX in uct_iface_local_is_reachable.
        assertThat(refusal(oneTransport("cma", new int[0], 4))).contains("UCX's cma reads 8");
        int[] namespaced = {1, 2, 3, 4, 5, 6, 7, 0x80};
        assertThat(refusal(oneTransport("posix", namespaced, 8))).as("namespace flag: 4 more bytes")
                .contains("UCX's posix reads 12");
        assertThat(refusal(oneTransport("sysv", hostId, 7))).contains("UCX's sysv reads 8");
        assertThat(refusal(oneTransport("some-future-transport", new int[0], 0))).as("unknown: lengths only").isNull();
    }

    // --- remote key ---

    /** md map {0, 2}: keys of 2 and 0 bytes; memory type; system device and distance list as given. */
    private static ByteBuffer key(int memoryType, int... tail) {
        Packed key = new Packed().u8(0b101, 0, 0, 0, 0, 0, 0, 0).u8(memoryType).u8(2).bytes(2).u8(0);
        return key.u8(tail).buffer();
    }

    private static String keyRefusal(ByteBuffer key, int nixlMemoryType) {
        try {
            UcxPackedFormats.validateRemoteKey(key, nixlMemoryType, "MemSection[0].descs[0].key");
        } catch (InvalidAgentMetadataException e) {
            assertThat(e.field()).isEqualTo("MemSection[0].descs[0].key");
            return e.getMessage();
        }
        return null;
    }

    @Test
    void wellFormedKeysAreAccepted() {
        assertThat(keyRefusal(key(0, 0xff), NixlMetadataFormat.MEM_DRAM)).isNull();
        assertThat(keyRefusal(key(1, 0x03, 0x05, 0x10, 0x20, 0xff), NixlMetadataFormat.MEM_VRAM)).as("distances").isNull();
    }

    @Test
    void aMemoryTypePastUcxsTablesIsRefused() {
        // Crashed the loading JVM in ucp_proto_init_add_buffer_copy_time before this check.
        assertThat(keyRefusal(key(10, 0xff), NixlMetadataFormat.MEM_DRAM)).contains("memory type is 10");
        assertThat(keyRefusal(key(0xff, 0xff), NixlMetadataFormat.MEM_DRAM)).contains("memory type is 255");
    }

    @Test
    void memoryTypesThatContradictTheNixlSectionAreRefused() {
        assertThat(keyRefusal(key(0, 0xff), NixlMetadataFormat.MEM_VRAM)).contains("host memory in a VRAM section");
        // ROCm-managed (4) passed the table check and, with a local interface gone, crashed UCX in fuzzing.
        assertThat(keyRefusal(key(4, 0xff), NixlMetadataFormat.MEM_DRAM)).contains("memory type is 4 in a DRAM section");
        assertThat(keyRefusal(key(1, 0xff), NixlMetadataFormat.MEM_DRAM)).contains("memory type is 1 in a DRAM section");
    }

    @Test
    void aKeyNamingNoMemoryDomainIsMapAndTypeOnly() {
        // What UCX packs when no transport needs a key (UCX_TLS=tcp): no system device follows.
        assertThat(keyRefusal(new Packed().u8(0, 0, 0, 0, 0, 0, 0, 0).u8(0).buffer(), NixlMetadataFormat.MEM_DRAM))
                .isNull();
        assertThat(keyRefusal(new Packed().u8(0, 0, 0, 0, 0, 0, 0, 0).u8(0, 0xff).buffer(), NixlMetadataFormat.MEM_DRAM))
                .contains("end 1 byte(s) follow");
        assertThat(keyRefusal(new Packed().u8(0, 0, 0, 0, 0, 0, 0, 0).u8(12).buffer(), NixlMetadataFormat.MEM_DRAM))
                .contains("memory type is 12");
    }

    @Test
    void aDistanceListWithoutItsTerminatorIsRefused() {
        // UCX reads distances up to the terminator with no end bound once the system device is known.
        assertThat(keyRefusal(key(0, 0x03, 0x05, 0x10, 0x20), NixlMetadataFormat.MEM_DRAM))
                .contains("distance[1] runs past the end");
        assertThat(keyRefusal(key(0, 0x03, 0x05), NixlMetadataFormat.MEM_DRAM)).contains("distance[0] runs past the end");
    }

    @Test
    void aKeyCutShortOrWithBytesAfterItIsRefused() {
        ByteBuffer whole = key(0, 0xff);
        for (int length = 0; length < whole.limit(); length++) {
            assertThat(keyRefusal(whole.duplicate().limit(length), NixlMetadataFormat.MEM_DRAM))
                    .as("cut at %d", length).contains("runs past the end");
        }
        assertThat(keyRefusal(key(0, 0xff, 0), NixlMetadataFormat.MEM_DRAM)).contains("end 1 byte(s) follow");
    }

    @Test
    void aRealBlobWithAMutatedKeyIsRefusedNamingTheDescriptor() throws Exception {
        byte[] blob = resource("ucx-two-dram-regions.bin");
        int keyAt = NixlMetadataFuzz.opaqueRanges(blob).get(1)[0];
        blob[keyAt + 8] = 10; // memory type
        assertThatThrownBy(() -> NixlMetadataFormat.validate(blob)).isInstanceOf(InvalidAgentMetadataException.class)
                .hasMessageContaining("'MemSection[0].descs[0].key' (UCX remote key): memory type is 10");
        byte[] address = resource("ucx-two-dram-regions.bin");
        address[NixlMetadataFuzz.opaqueRanges(address).get(0)[0]] = 0x22; // version 2 in the low nibble
        assertThatThrownBy(() -> NixlMetadataFormat.validate(address)).isInstanceOf(InvalidAgentMetadataException.class)
                .hasMessageContaining("'Conns[0].c' (UCX worker address): header has address version 2");
    }
}
