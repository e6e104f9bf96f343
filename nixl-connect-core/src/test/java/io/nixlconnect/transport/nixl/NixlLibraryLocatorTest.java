package io.nixlconnect.transport.nixl;

import io.nixlconnect.transport.TransportException;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class NixlLibraryLocatorTest {

    @TempDir
    Path temp;

    private final Map<String, String> env = new HashMap<>();
    private final Properties properties = new Properties();

    private NixlLibraryLocator locator() {
        return new NixlLibraryLocator(env::get, properties);
    }

    private Path fakeLibraryIn(Path dir) throws IOException {
        Files.createDirectories(dir);
        return Files.createFile(dir.resolve(NixlInstallation.CAPI_FILE));
    }

    @Test
    void whenNothingIsFoundTheErrorListsEverySearchedPlaceAndWhatToSet() {
        env.put("NIXL_PREFIX", temp.resolve("prefix").toString());
        env.put("NIXL_PYTHON_PATH", temp.toString());
        env.put("HOME", temp.resolve("home").toString());
        env.put("LD_LIBRARY_PATH", temp.resolve("ld").toString());

        assertThatThrownBy(() -> locator().locate(NixlSettings.defaults()))
                .isInstanceOf(TransportException.class)
                .hasMessageContaining(temp.resolve("prefix/lib/x86_64-linux-gnu").toString())
                .hasMessageContaining(temp.resolve("prefix/lib64").toString())
                .hasMessageContaining(temp.resolve(".nixl_cu12.mesonpy.libs").toString())
                .hasMessageContaining(temp.resolve(".nixl_cu13.mesonpy.libs").toString())
                .hasMessageContaining(temp.resolve("ld").toString())
                .hasMessageContaining("/usr/local/lib")
                .hasMessageContaining("nixl.library.path")
                .hasMessageContaining("NIXL_PREFIX")
                .hasMessageContaining("NIXL_PYTHON_PATH");
    }

    @Test
    void aConfiguredDirectoryWithoutTheLibraryIsAnErrorNamingIt() {
        Path empty = temp.resolve("empty");
        assertThatThrownBy(() -> locator().locate(NixlSettings.defaults().withLibraryDir(empty)))
                .isInstanceOf(TransportException.class)
                .hasMessageContaining("NixlSettings.libraryDir")
                .hasMessageContaining(empty.resolve("libnixl_capi.so").toString());
    }

    @Test
    void theSystemPropertyIsUsedWhenNoDirectoryIsConfigured() throws IOException {
        Path library = fakeLibraryIn(temp.resolve("custom"));
        properties.setProperty("nixl.library.path", library.getParent().toString());

        NixlInstallation found = locator().locate(NixlSettings.defaults());

        assertThat(found.capiLibrary()).isEqualTo(library);
        assertThat(found.source()).contains("nixl.library.path");
    }

    @Test
    void findsAPrefixInstallAndItsPluginDirectory() throws IOException {
        Path libDir = temp.resolve("nvda_nixl/lib/x86_64-linux-gnu");
        Path library = fakeLibraryIn(libDir);
        Files.createDirectories(libDir.resolve("plugins"));
        env.put("NIXL_PREFIX", temp.resolve("nvda_nixl").toString());

        NixlInstallation found = locator().locate(NixlSettings.defaults());

        assertThat(found.capiLibrary()).isEqualTo(library);
        assertThat(found.pluginDir()).isEqualTo(libDir.resolve("plugins"));
        assertThat(found.source()).contains("NIXL_PREFIX");
    }

    @Test
    void findsAWheelInAConfiguredSitePackagesDirectory() throws IOException {
        Path site = temp.resolve("site-packages");
        Path library = fakeLibraryIn(site.resolve(".nixl_cu13.mesonpy.libs"));
        env.put("NIXL_PREFIX", temp.resolve("none").toString());
        env.put("NIXL_PYTHON_PATH", site.toString());

        assertThat(locator().locate(NixlSettings.defaults()).capiLibrary()).isEqualTo(library);
    }

    @Test
    void findsAWheelInAVirtualEnvironment() throws IOException {
        Path venv = temp.resolve("venv");
        Path library = fakeLibraryIn(venv.resolve("lib/python3.12/site-packages/.nixl_cu12.mesonpy.libs"));
        env.put("NIXL_PREFIX", temp.resolve("none").toString());
        env.put("VIRTUAL_ENV", venv.toString());

        NixlInstallation found = locator().locate(NixlSettings.defaults());

        assertThat(found.capiLibrary()).isEqualTo(library);
        assertThat(found.source()).contains("Python wheel");
    }

    @Test
    void aConfiguredPluginDirectoryMustExist() throws IOException {
        Path library = fakeLibraryIn(temp.resolve("lib"));
        NixlSettings settings = NixlSettings.defaults().withLibraryDir(library.getParent())
                .withPluginDir(temp.resolve("no-plugins"));

        assertThatThrownBy(() -> locator().locate(settings))
                .isInstanceOf(TransportException.class)
                .hasMessageContaining("no-plugins");
    }

    @Test
    void settingsRefuseBadNames() {
        assertThatThrownBy(() -> NixlSettings.defaults().withBackends(List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one");
        assertThatThrownBy(() -> NixlSettings.defaults().withBackends(List.of("UC\0X")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("NUL");
    }
}
