package io.nixlconnect.autoconfigure.dynamo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.nixlconnect.autoconfigure.ConfigurationMetadata;
import io.nixlconnect.autoconfigure.NixlConnectAutoConfiguration;
import io.nixlconnect.dynamo.DynamoClient;
import io.nixlconnect.dynamo.DynamoRefusedException;
import io.nixlconnect.dynamo.DynamoRuntime;
import io.nixlconnect.dynamo.ResponseStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import tools.jackson.databind.JsonNode;

/**
 * docs/configuration.md has a row for every {@code nixl.connect.dynamo.*} property and no other, and
 * docs/observability.md (and configuration.md's short list) name exactly the Dynamo meters a live registry has, each
 * with the tags it carries.
 */
class NixlDynamoDocsTests {

    @TempDir
    Path kv;

    private static String doc(String name) throws Exception {
        return Files.readString(Path.of("../docs/" + name));
    }

    @Test
    void configurationMdHasARowForEachDynamoPropertyAndNoOther() throws Exception {
        Set<String> documented = new TreeSet<>();
        Matcher row = Pattern.compile("(?m)^\\| `(nixl\\.connect\\.dynamo\\.[a-z.-]+)` \\|").matcher(doc("configuration.md"));
        while (row.find()) {
            documented.add(row.group(1));
        }
        Set<String> properties = new TreeSet<>();
        for (JsonNode property : ConfigurationMetadata.properties()) {
            String name = property.get("name").asString();
            if (name.startsWith("nixl.connect.dynamo.")) {
                properties.add(name);
            }
        }
        assertThat(properties).hasSize(23);
        assertThat(documented).isEqualTo(properties);
    }

    @Test
    void theDocumentedMetersAreExactlyThoseRegisteredWithTheirTags() throws Exception {
        String observability = doc("observability.md");
        Map<String, Set<String>> documented = new TreeMap<>();
        Matcher row = Pattern.compile("(?m)^\\| `(nixl\\.dynamo\\.[a-z.]+)` \\| (?:counter|gauge|timer|long-task timer) \\| ([^|]*) \\|")
                .matcher(observability);
        while (row.find()) {
            Set<String> tags = new TreeSet<>();
            for (String tag : row.group(2).split(",")) {
                String trimmed = tag.trim().replace("`", "");
                if (!trimmed.isEmpty() && !trimmed.equals("–")) {
                    tags.add(trimmed);
                }
            }
            documented.put(row.group(1), tags);
        }
        Set<String> listedInConfiguration = new TreeSet<>();
        Matcher listed = Pattern.compile("(?m)^\\| `(nixl\\.dynamo\\.[a-z.]+)` \\| (?:counter|gauge|timer|long-task timer) \\|$")
                .matcher(doc("configuration.md"));
        while (listed.find()) {
            listedInConfiguration.add(listed.group(1));
        }

        CountDownLatch release = new CountDownLatch(1);
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(NixlConnectAutoConfiguration.class,
                        NixlDynamoAutoConfiguration.class, NixlDynamoObservabilityAutoConfiguration.class,
                        MetricsAutoConfiguration.class, CompositeMeterRegistryAutoConfiguration.class,
                        SimpleMetricsExportAutoConfiguration.class, ObservationAutoConfiguration.class))
                .withPropertyValues("nixl.connect.backend=embedded", "nixl.connect.dynamo.enabled=true",
                        "nixl.connect.dynamo.discovery-backend=file", "nixl.connect.dynamo.file-kv-directory=" + kv,
                        "nixl.connect.dynamo.rpc-host=127.0.0.1", "nixl.connect.dynamo.max-concurrent-requests=1")
                .withBean(DynamoEndpointRegistration.class, () -> DynamoEndpointRegistration.of("demo.docs.generate",
                        (request, responder) -> {
                            responder.send("started");
                            if ("hold".equals(request.payload())) {
                                release.await(30, TimeUnit.SECONDS);
                            }
                        }))
                .run(context -> {
                    // This application calls its own endpoint: one registry sees both sides.
                    DynamoClient client = context.getBean(DynamoRuntime.class).client("demo.docs.generate");
                    client.waitForInstances(Duration.ofSeconds(10));
                    client.call("once").readAll();
                    ResponseStream held = client.call("hold");
                    held.read();
                    assertThatThrownBy(() -> client.call("refused")).isInstanceOf(DynamoRefusedException.class);
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    Map<String, Set<String>> registered = new TreeMap<>();
                    for (Meter meter : registry.getMeters()) {
                        String name = meter.getId().getName();
                        if (name.startsWith("nixl.dynamo.")) {
                            Set<String> tags = registered.computeIfAbsent(name, key -> new TreeSet<>());
                            meter.getId().getTags().forEach(tag -> tags.add(tag.getKey()));
                        }
                    }
                    release.countDown();
                    held.readAll();
                    assertThat(registered).isEqualTo(documented);
                    assertThat(listedInConfiguration).isEqualTo(documented.keySet());
                });
    }
}
