package io.nixlconnect.benchmarks;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The command lines of the harnesses' child JVMs (producers, peers, soak roles): this JVM's java and class path. */
final class ChildJvms {

    private ChildJvms() {
    }

    /** {@code java OPTIONS -cp CLASSPATH MAIN ARGUMENTS}, with this JVM's java and class path. */
    static List<String> command(Class<?> main, List<String> options, String... arguments) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(options);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(arguments));
        return command;
    }

    /** {@code -Dname=value} for each of {@link BenchmarkOptions#FORWARDED} set in this JVM, except {@code except}. */
    static List<String> forwardedProperties(String... except) {
        List<String> options = new ArrayList<>();
        for (String property : BenchmarkOptions.FORWARDED) {
            String value = System.getProperty(property);
            if (value != null && !List.of(except).contains(property)) {
                options.add("-D" + property + "=" + value);
            }
        }
        return options;
    }
}
