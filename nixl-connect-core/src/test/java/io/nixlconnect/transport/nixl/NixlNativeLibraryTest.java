package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.TransportException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Refusing what is not a usable NIXL, without crashing the JVM. */
class NixlNativeLibraryTest {

    @TempDir
    Path temp;

    @Test
    void aFileThatIsNoLibraryIsRefusedWithTheLoaderMessage() throws IOException {
        Path bogus = Files.writeString(temp.resolve(NixlInstallation.CAPI_FILE), "not an ELF file");

        assertThatThrownBy(() -> NixlNativeLibrary.openVerified(new NixlInstallation(bogus, null, "test")))
                .isInstanceOf(TransportException.class)
                .hasMessageContaining("cannot load " + bogus);
    }

    @Test
    void aLibraryWithoutTheNixlSymbolsIsRefusedAsTooOld() throws IOException {
        Path libz = Path.of("/lib/x86_64-linux-gnu/libz.so.1");
        Assumptions.assumeTrue(Files.exists(libz), "needs " + libz + " as a shared library that is not NIXL");
        Path capi = Files.createSymbolicLink(temp.resolve(NixlInstallation.CAPI_FILE), libz);

        assertThatThrownBy(() -> NixlNativeLibrary.openVerified(new NixlInstallation(capi, null, "test")))
                .isInstanceOf(TransportException.class)
                .hasMessageContaining("nixl_capi_create_xfer_req")
                .hasMessageContaining("NIXL >= 1.1 is required");
    }

    /** A library exporting every required symbol whose nixl_capi_is_stub() says true, as NIXL's stub build does. */
    @Test
    void aStubBuildIsRefused() throws Exception {
        StringBuilder source = new StringBuilder("#include <stdbool.h>\nbool nixl_capi_is_stub(void) { return true; }\n");
        for (String symbol : NixlCapi.REQUIRED_SYMBOLS) {
            if (!symbol.equals("nixl_capi_is_stub")) {
                source.append("int ").append(symbol).append("(void) { return -3; }\n");
            }
        }
        Path c = Files.writeString(temp.resolve("stub.c"), source);
        Path capi = temp.resolve(NixlInstallation.CAPI_FILE);
        Process gcc;
        try {
            gcc = new ProcessBuilder("gcc", "-shared", "-fPIC", "-o", capi.toString(), c.toString())
                    .redirectErrorStream(true).start();
        } catch (IOException e) {
            Assumptions.abort("gcc is not available to build a stub library: " + e.getMessage());
            return;
        }
        assertThat(gcc.waitFor(60, TimeUnit.SECONDS)).isTrue();
        Assumptions.assumeTrue(gcc.exitValue() == 0, "gcc failed: " + new String(gcc.getInputStream().readAllBytes()));

        assertThatThrownBy(() -> NixlNativeLibrary.openVerified(new NixlInstallation(capi, null, "test")))
                .isInstanceOf(TransportException.class)
                .hasMessageContaining("stub build");
    }

    @Test
    void readsTheMissingDependencyFromTheLoaderMessage() {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError("Unable to load library '/opt/x/libnixl_capi.so':\n"
                + "libnixl_build.so: cannot open shared object file: No such file or directory");
        assertThat(NixlNativeLibrary.missingDependency(error)).isEqualTo("libnixl_build.so");
        assertThat(NixlNativeLibrary.missingDependency(new UnsatisfiedLinkError("other"))).isNull();
    }
}
