package io.nixlconnect.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The nixl-connect sample: a producer that publishes a tensor over HTTP as {@code RdmaMetadata} and a
 * consumer that reads it and writes into the producer's memory with one-sided transfers.
 *
 * <p>{@code sample.role} (or the {@code producer} / {@code consumer} profile) picks the role; the default,
 * {@code both}, runs both against each other in this one process, prints the result and exits
 * (0 when every checksum matched, 1 otherwise).
 *
 * <p>{@code sample.dynamo.call} or {@code sample.dynamo.serve} makes it a Dynamo caller or encode worker instead
 * ({@link DynamoSample}), which exits when done (0 when every read and every reader completed, 1 otherwise).
 */
@SpringBootApplication
@EnableConfigurationProperties(SampleProperties.class)
public class SampleApplication {

    /** The application {@code main} runs: with {@link DynamoMode}, which turns {@code sample.dynamo.*} into role dynamo. */
    public static SpringApplication application() {
        SpringApplication application = new SpringApplication(SampleApplication.class);
        application.addListeners(new DynamoMode());
        return application;
    }

    public static void main(String[] args) {
        ConfigurableApplicationContext context = application().run(args);
        DemoRunner demo = context.getBeanProvider(DemoRunner.class).getIfAvailable();
        if (DynamoMode.isDynamo(context.getEnvironment())) {
            if (context.getBeanProvider(DynamoSample.Outcome.class).getIfAvailable() == null) {
                // An ahead-of-time context (-Dspring.aot.enabled=true) was fixed at build time, without these modes.
                System.out.println("result: FAILED: the Dynamo modes need a context built at run time:"
                        + " run without -Dspring.aot.enabled=true");
                SpringApplication.exit(context);
                System.exit(1);
            }
            // Closes the context (deregistering a served endpoint first), then exits with DynamoSample's code.
            System.exit(SpringApplication.exit(context));
        }
        if (demo != null && demo.exitAfterDemo()) {
            // Closes the context (releasing the connector and its buffers), then exits with DemoRunner's code.
            System.exit(SpringApplication.exit(context));
        }
    }
}
