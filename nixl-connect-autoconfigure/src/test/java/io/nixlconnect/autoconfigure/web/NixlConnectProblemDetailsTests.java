package io.nixlconnect.autoconfigure.web;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.nixlconnect.ConnectorClosedException;
import io.nixlconnect.InvalidMetadataException;
import io.nixlconnect.OperationStatus;
import io.nixlconnect.TooManyOperationsException;
import io.nixlconnect.TransferException;
import io.nixlconnect.TransferTimeoutException;
import io.nixlconnect.TransportFailureException;
import io.nixlconnect.WaitTimeoutException;
import io.nixlconnect.autoconfigure.NixlConnectAutoConfiguration;
import io.nixlconnect.transport.TransportException;
import java.io.EOFException;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.http.converter.autoconfigure.HttpMessageConvertersAutoConfiguration;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.webmvc.autoconfigure.DispatcherServletAutoConfiguration;
import org.springframework.boot.webmvc.autoconfigure.WebMvcAutoConfiguration;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.WebApplicationContext;

/** The library's exceptions, escaping a Spring MVC handler, become problem details (MockMvc). */
class NixlConnectProblemDetailsTests {

    private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(NixlConnectAutoConfiguration.class,
                    NixlConnectProblemDetailsAutoConfiguration.class, WebMvcAutoConfiguration.class,
                    DispatcherServletAutoConfiguration.class, HttpMessageConvertersAutoConfiguration.class,
                    JacksonAutoConfiguration.class))
            .withPropertyValues("nixl.connect.backend=embedded")
            .withUserConfiguration(Failing.class);

    @Test
    void atCapacityIs503WithRetryAfter() {
        mvc(mvc -> mvc.perform(get("/fail/capacity")).andExpect(status().isServiceUnavailable())
                .andExpect(content().contentType(MediaType.APPLICATION_PROBLEM_JSON))
                .andExpect(header().string("Retry-After", "1"))
                .andExpect(jsonPath("$.status").value(503))
                .andExpect(jsonPath("$.title").value("Service Unavailable"))
                .andExpect(jsonPath("$.instance").value("/fail/capacity"))
                // the message (which names limits and peers) stays in the log
                .andExpect(jsonPath("$.detail").value(
                        "This worker has as many transfers in flight as it takes; retry shortly.")));
    }

    @Test
    void aClosedConnectorIs503() {
        mvc(mvc -> mvc.perform(get("/fail/closed")).andExpect(status().isServiceUnavailable())
                .andExpect(content().contentType(MediaType.APPLICATION_PROBLEM_JSON))
                .andExpect(header().doesNotExist("Retry-After")));
    }

    @Test
    void bothTimeoutsAre504() {
        mvc(mvc -> {
            for (String which : new String[] {"transfer-timeout", "wait-timeout"}) {
                mvc.perform(get("/fail/" + which)).andExpect(status().isGatewayTimeout())
                        .andExpect(content().contentType(MediaType.APPLICATION_PROBLEM_JSON))
                        .andExpect(jsonPath("$.status").value(504));
            }
        });
    }

    @Test
    void peerFailuresAre502EvenWhenWrappedOrCausedByAnEof() {
        mvc(mvc -> {
            for (String which : new String[] {"transfer", "transport", "wrapped"}) {
                mvc.perform(get("/fail/" + which)).andExpect(status().isBadGateway())
                        .andExpect(content().contentType(MediaType.APPLICATION_PROBLEM_JSON))
                        .andExpect(jsonPath("$.status").value(502))
                        .andExpect(jsonPath("$.detail").value("A transfer with a peer worker failed."));
            }
        });
    }

    @Test
    void invalidMetadataIs400NamingTheField() {
        mvc(mvc -> mvc.perform(get("/fail/metadata")).andExpect(status().isBadRequest())
                .andExpect(content().contentType(MediaType.APPLICATION_PROBLEM_JSON))
                .andExpect(jsonPath("$.field").value("descriptors[0].ptr")));
    }

    @Test
    void theApplicationsOwnHandlersWin() {
        runner.withUserConfiguration(ApplicationAdvice.class).run(context -> {
            MockMvc mvc = MockMvcBuilders.webAppContextSetup((WebApplicationContext) context).build();
            mvc.perform(get("/fail/transfer")).andExpect(status().isIAmATeapot());
            // what the application's advice does not handle is still answered by the starter's
            mvc.perform(get("/fail/capacity")).andExpect(status().isServiceUnavailable());
            // a controller's own handler comes before any advice
            mvc.perform(get("/local/metadata")).andExpect(status().isConflict());
        });
    }

    @Test
    void offByProperty() {
        runner.withPropertyValues("nixl.connect.problem-details.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean(NixlConnectExceptionHandler.class));
        runner.withPropertyValues("nixl.connect.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean(NixlConnectExceptionHandler.class));
    }

    @Test
    void notInANonWebApplication() {
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(NixlConnectAutoConfiguration.class,
                        NixlConnectProblemDetailsAutoConfiguration.class))
                .withPropertyValues("nixl.connect.backend=embedded")
                .run(context -> assertThat(context).doesNotHaveBean(NixlConnectExceptionHandler.class));
    }

    private void mvc(MvcTest test) {
        runner.run(context -> {
            assertThat(context).hasSingleBean(NixlConnectExceptionHandler.class);
            test.run(MockMvcBuilders.webAppContextSetup((WebApplicationContext) context).build());
        });
    }

    @FunctionalInterface
    interface MvcTest {
        void run(MockMvc mvc) throws Exception;
    }

    @RestController
    static class Failing {

        @GetMapping("/fail/{which}")
        String fail(@PathVariable String which) {
            throw switch (which) {
                case "capacity" -> new TooManyOperationsException("4096 operations in flight", 4096);
                case "closed" -> new ConnectorClosedException("connector closed");
                case "transfer-timeout" -> new TransferTimeoutException("read timed out after PT30S");
                case "wait-timeout" -> new WaitTimeoutException(OperationStatus.IN_PROGRESS, "wait ran out");
                // what a producer killed mid-read looked like: an EOF in the chain, which Spring took for a client gone
                case "transfer" -> new TransferException(OperationStatus.ERRORED, "read failed",
                        new EOFException("connection closed by peer"));
                case "transport" -> new TransportFailureException("embedded", "The embedded transport failed to register memory",
                        new TransportException("peer 10.0.0.1:9000 refused"));
                case "wrapped" -> new CompletionException(new TransferException(OperationStatus.ERRORED, "read failed", null));
                case "metadata" -> new InvalidMetadataException("descriptors[0].ptr", "must not be 0");
                default -> new IllegalArgumentException(which);
            };
        }
    }

    @RestController
    static class LocalHandler {

        @GetMapping("/local/metadata")
        String fail() {
            throw new InvalidMetadataException("descriptors", "is missing");
        }

        @ExceptionHandler(InvalidMetadataException.class)
        ResponseEntity<String> local(InvalidMetadataException e) {
            return ResponseEntity.status(HttpStatus.CONFLICT).body("mine");
        }
    }

    @RestControllerAdvice
    @org.springframework.context.annotation.Import(LocalHandler.class)
    static class ApplicationAdvice {

        @ExceptionHandler(TransferException.class)
        ResponseEntity<ProblemDetail> transferFailed(TransferException e) {
            return ResponseEntity.status(HttpStatus.I_AM_A_TEAPOT).body(ProblemDetail.forStatus(HttpStatus.I_AM_A_TEAPOT));
        }
    }
}
