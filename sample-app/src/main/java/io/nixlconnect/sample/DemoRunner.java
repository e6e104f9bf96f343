package io.nixlconnect.sample;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.ExitCodeGenerator;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.stereotype.Component;

/**
 * Runs the demo once the web server is up (consumer and both roles), prints the report, and gives
 * {@link SampleApplication} the exit code: 0 when every check passed, 1 otherwise.
 */
@Component
@ConditionalOnExpression(DemoClient.CONSUMER_ROLE)
@ConditionalOnProperty(name = "sample.run-demo", havingValue = "true", matchIfMissing = true)
public class DemoRunner implements ApplicationRunner, ExitCodeGenerator {

    private static final Logger log = LoggerFactory.getLogger(DemoRunner.class);

    private final DemoClient client;
    private final SampleProperties properties;
    private volatile DemoResult result;

    public DemoRunner(DemoClient client, SampleProperties properties) {
        this.client = client;
        this.properties = properties;
    }

    @Override
    public void run(ApplicationArguments args) {
        DemoResult outcome;
        try {
            outcome = client.run();
        } catch (RuntimeException e) {
            log.error("The demo could not run", e);
            return; // result stays null: exit code 1
        }
        result = outcome;
        System.out.println();
        outcome.lines().forEach(System.out::println);
        System.out.println();
        System.out.flush();
    }

    /** The demo's outcome; {@code null} before it ran or when it could not run at all. */
    public DemoResult result() {
        return result;
    }

    public boolean exitAfterDemo() {
        return properties.isExitAfterDemo();
    }

    @Override
    public int getExitCode() {
        DemoResult outcome = result;
        return outcome != null && outcome.ok() ? 0 : 1;
    }
}
