package io.nixlconnect;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * How tests start a child JVM: the test JVM's own {@code java}, with native access granted to the class path. JNA
 * (NIXL, same-host copy) loads native code, which Java 24+ reports with a "restricted method" warning on stderr
 * otherwise; Java 17 to 23 accept the flag too, so it is given whatever the version ({@link ChildJvmTest}).
 */
public final class ChildJvm {

    /** Grants JNA, and anything else on the class path, native access without a warning. */
    public static final String NATIVE_ACCESS = "--enable-native-access=ALL-UNNAMED";

    private ChildJvm() {
    }

    /** {@code <java.home>/bin/java --enable-native-access=ALL-UNNAMED options...}: append the class path and main class. */
    public static List<String> command(String... options) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add(NATIVE_ACCESS);
        command.addAll(List.of(options));
        return command;
    }
}
