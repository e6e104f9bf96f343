package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The configuration metadata the build generated ({@code META-INF/spring-configuration-metadata.json}: the
 * configuration processor's, merged with the additional metadata), as the properties tests and the docs tests read it.
 */
public final class ConfigurationMetadata {

    private ConfigurationMetadata() {
    }

    /** Every property's entry. */
    public static List<JsonNode> properties() throws IOException {
        try (InputStream in = ConfigurationMetadata.class.getResourceAsStream(
                "/META-INF/spring-configuration-metadata.json")) {
            assertThat(in).as("generated configuration metadata").isNotNull();
            List<JsonNode> properties = new ArrayList<>();
            JsonMapper.builder().build().readTree(in).get("properties").forEach(properties::add);
            return properties;
        }
    }

    /** The default value of each property that has one, by name. */
    public static Map<String, JsonNode> defaults() throws IOException {
        Map<String, JsonNode> defaults = new HashMap<>();
        for (JsonNode property : properties()) {
            if (property.has("defaultValue")) {
                defaults.put(property.get("name").asString(), property.get("defaultValue"));
            }
        }
        return defaults;
    }
}
