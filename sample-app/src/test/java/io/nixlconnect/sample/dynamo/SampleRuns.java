package io.nixlconnect.sample.dynamo;

import io.nixlconnect.sample.SampleApplication;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The sample as {@code java -jar} runs it, in this JVM: {@link SampleApplication}'s context with the arguments, then
 * the exit code {@code main} would exit with (the context closed, a served endpoint deregistered).
 */
final class SampleRuns {

    static final Pattern READ = Pattern.compile(
            "^dynamo: read (\\d+) bytes from (\\S+) instance ([0-9a-f]+) sha256 ([0-9a-f]{64})$", Pattern.MULTILINE);
    static final Pattern SERVED = Pattern.compile("^dynamo: served (\\d+) bytes sha256 ([0-9a-f]{64})$",
            Pattern.MULTILINE);

    private SampleRuns() {
    }

    /** Runs the sample to its end; a start-up failure is exit code 1, as {@code main} ends then. */
    static int run(String... args) {
        ConfigurableApplicationContext context;
        try {
            context = SampleApplication.application().run(args);
        } catch (RuntimeException e) {
            System.out.println("start-up failed: " + e);
            return 1;
        }
        return SpringApplication.exit(context);
    }

    static String[] args(List<String> common, String... more) {
        List<String> all = new ArrayList<>(common);
        all.addAll(List.of(more));
        return all.toArray(String[]::new);
    }

    /** Group {@code group} of every match of {@code pattern} in {@code output}. */
    static List<String> all(Pattern pattern, String output, int group) {
        List<String> values = new ArrayList<>();
        Matcher matcher = pattern.matcher(output);
        while (matcher.find()) {
            values.add(matcher.group(group));
        }
        return values;
    }

    /** Dynamo's file-discovery records left in {@code kv} (none once every instance deregistered). */
    static List<Path> discoveryRecords(Path kv) throws Exception {
        Path instances = kv.resolve("v1").resolve("instances");
        if (!Files.isDirectory(instances)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(instances)) {
            return files.filter(file -> !file.getFileName().toString().startsWith(".")).toList();
        }
    }
}
