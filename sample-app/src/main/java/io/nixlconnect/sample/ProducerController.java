package io.nixlconnect.sample;

import io.nixlconnect.ConnectorClosedException;
import io.nixlconnect.InvalidMetadataException;
import io.nixlconnect.NixlConnectException;
import io.nixlconnect.TooManyOperationsException;
import io.nixlconnect.TransferException;
import io.nixlconnect.TransferTimeoutException;
import io.nixlconnect.WaitTimeoutException;
import java.util.List;
import java.util.NoSuchElementException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.context.event.EventListener;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The producer's HTTP API. Metadata documents are returned as {@code RdmaMetadata.toJson()} writes them,
 * byte for byte: the compact JSON a Python Dynamo worker sends and accepts.
 *
 * <pre>
 * GET  /tensors                          the published tensors
 * GET  /tensors/{name}                   one tensor: size, device, crc32c
 * GET  /tensors/{name}/metadata          publishes it for one READ; the RdmaMetadata JSON
 * POST /tensors/{name}/writable?size=N   a fresh N-byte buffer for one WRITE; the RdmaMetadata JSON
 * GET  /tensors/{name}/checksum          waits for that WRITE, then the crc32c of what was written
 * </pre>
 */
@RestController
@RequestMapping("/tensors")
@ConditionalOnExpression(ProducerTensors.PRODUCER_ROLE)
public class ProducerController {

    private static final Logger log = LoggerFactory.getLogger(ProducerController.class);

    private final ProducerTensors tensors;

    public ProducerController(ProducerTensors tensors) {
        this.tensors = tensors;
    }

    /** Tells the operator where to point a consumer. */
    @EventListener
    void ready(WebServerInitializedEvent event) {
        String address = event.getApplicationContext().getEnvironment().getProperty("server.address", "127.0.0.1");
        for (TensorInfo tensor : tensors.list()) {
            log.info("Producer ready: GET http://{}:{}/tensors/{}/metadata publishes '{}' ({} bytes, crc32c {})", address,
                    event.getWebServer().getPort(), tensor.name(), tensor.name(), tensor.size(), tensor.crc32c());
        }
    }

    @GetMapping
    public List<TensorInfo> list() {
        return tensors.list();
    }

    @GetMapping("/{name}")
    public TensorInfo info(@PathVariable String name) {
        return tensors.info(name);
    }

    @GetMapping(path = "/{name}/metadata", produces = MediaType.APPLICATION_JSON_VALUE)
    public String metadata(@PathVariable String name) {
        return tensors.publish(name).toJson();
    }

    @PostMapping(path = "/{name}/writable", produces = MediaType.APPLICATION_JSON_VALUE)
    public String writable(@PathVariable String name, @RequestParam long size) {
        return tensors.createWritable(name, size).toJson();
    }

    @GetMapping("/{name}/checksum")
    public WriteReport checksum(@PathVariable String name) {
        return tensors.awaitWrite(name);
    }

    @ExceptionHandler(NoSuchElementException.class)
    ProblemDetail notFound(NoSuchElementException e) {
        return ProblemDetail.forStatusAndDetail(HttpStatus.NOT_FOUND, e.getMessage());
    }

    /** A bad argument, or a peer's metadata that breaks the wire format. */
    @ExceptionHandler({IllegalArgumentException.class, InvalidMetadataException.class})
    ProblemDetail badRequest(RuntimeException e) {
        return ProblemDetail.forStatusAndDetail(HttpStatus.BAD_REQUEST, e.getMessage());
    }

    @ExceptionHandler(IllegalStateException.class)
    ProblemDetail unavailable(IllegalStateException e) {
        return ProblemDetail.forStatusAndDetail(HttpStatus.SERVICE_UNAVAILABLE, e.getMessage());
    }

    /** At capacity or shutting down: try again later (or elsewhere). */
    @ExceptionHandler({TooManyOperationsException.class, ConnectorClosedException.class})
    ProblemDetail atCapacity(NixlConnectException e) {
        return ProblemDetail.forStatusAndDetail(HttpStatus.SERVICE_UNAVAILABLE, e.getMessage());
    }

    /** The peer did not read in time: the wait gave up, or the operation hit its own time limit. */
    @ExceptionHandler({WaitTimeoutException.class, TransferTimeoutException.class})
    ProblemDetail timeout(NixlConnectException e) {
        return ProblemDetail.forStatusAndDetail(HttpStatus.GATEWAY_TIMEOUT, e.getMessage());
    }

    @ExceptionHandler(TransferException.class)
    ProblemDetail failed(TransferException e) {
        return ProblemDetail.forStatusAndDetail(HttpStatus.BAD_GATEWAY, e.getMessage());
    }
}
