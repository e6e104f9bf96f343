package io.nixlconnect.autoconfigure.web;

import io.nixlconnect.ConnectorClosedException;
import io.nixlconnect.InvalidMetadataException;
import io.nixlconnect.TooManyOperationsException;
import io.nixlconnect.TransferException;
import io.nixlconnect.TransferTimeoutException;
import io.nixlconnect.TransportFailureException;
import io.nixlconnect.WaitTimeoutException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Answers a request whose handler let one of nixl-connect's exceptions escape with an RFC 9457 problem detail
 * ({@code application/problem+json}) instead of Boot's generic 500, for Spring MVC and WebFlux alike:
 *
 * <ul>
 *   <li>{@link TooManyOperationsException}: 503 with {@code Retry-After: 1} (at the in-flight limit);</li>
 *   <li>{@link ConnectorClosedException}: 503 (this worker is shutting down);</li>
 *   <li>{@link TransferTimeoutException}, {@link WaitTimeoutException}: 504 (the peer did not finish in time);</li>
 *   <li>any other {@link TransferException}, and {@link TransportFailureException}: 502 (the peer or the transport
 *   failed or refused);</li>
 *   <li>{@link InvalidMetadataException}: 400, with the offending {@code field}.</li>
 * </ul>
 *
 * The exception's message stays out of the response (it names peers, addresses and limits); the detail says what
 * kind of failure it was, and the exception is logged: WARN for 502 and 504, DEBUG otherwise. A 502 or 504 logs its
 * stack trace for the first exception of its type and then at most once a minute per type, the others one line each
 * (a peer that fails every request must not fill the log with the same stack); at DEBUG every one logs its stack. Ordered
 * last, so that the application's own {@code @ExceptionHandler}s, in its controllers or its advice, win; off with
 * {@code nixl.connect.problem-details.enabled=false}. Spring matches the causes too, so an exception wrapped in a
 * {@code CompletionException} is answered the same way.
 */
@RestControllerAdvice
@Order(Ordered.LOWEST_PRECEDENCE)
public class NixlConnectExceptionHandler {

    private static final Logger log = LoggerFactory.getLogger(NixlConnectExceptionHandler.class);

    /** Seconds a client is told to wait before retrying a request refused at the in-flight limit. */
    static final String RETRY_AFTER_SECONDS = "1";

    /** Per exception type, at most one stack trace per this interval for the WARNs of 502 and 504. */
    static final Duration STACK_TRACE_INTERVAL = Duration.ofMinutes(1);

    /** Causes shown in a one-line WARN; a longer chain is cut there. */
    private static final int ONE_LINE_CAUSES = 4;

    private final StackTraceRateLimit stackTraces;

    public NixlConnectExceptionHandler() {
        this(new StackTraceRateLimit(STACK_TRACE_INTERVAL, System::nanoTime));
    }

    NixlConnectExceptionHandler(StackTraceRateLimit stackTraces) {
        this.stackTraces = stackTraces;
    }

    @ExceptionHandler(TooManyOperationsException.class)
    public ResponseEntity<ProblemDetail> atCapacity(TooManyOperationsException e) {
        log.debug("Answering 503: {}", e.toString());
        return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE).header(HttpHeaders.RETRY_AFTER, RETRY_AFTER_SECONDS)
                .body(problem(HttpStatus.SERVICE_UNAVAILABLE,
                        "This worker has as many transfers in flight as it takes; retry shortly."));
    }

    @ExceptionHandler(ConnectorClosedException.class)
    public ResponseEntity<ProblemDetail> closed(ConnectorClosedException e) {
        log.debug("Answering 503: {}", e.toString());
        return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
                .body(problem(HttpStatus.SERVICE_UNAVAILABLE, "This worker is shutting down and takes no new transfers."));
    }

    // TransferTimeoutException is a TransferException: its own handler keeps it from the 502 below.
    @ExceptionHandler({TransferTimeoutException.class, WaitTimeoutException.class})
    public ResponseEntity<ProblemDetail> timedOut(RuntimeException e) {
        warn("Answering 504: a transfer timed out", e);
        return ResponseEntity.status(HttpStatus.GATEWAY_TIMEOUT)
                .body(problem(HttpStatus.GATEWAY_TIMEOUT, "A transfer with a peer worker did not finish in time."));
    }

    @ExceptionHandler({TransferException.class, TransportFailureException.class})
    public ResponseEntity<ProblemDetail> peerFailed(RuntimeException e) {
        warn("Answering 502: a transfer with a peer failed", e);
        return ResponseEntity.status(HttpStatus.BAD_GATEWAY)
                .body(problem(HttpStatus.BAD_GATEWAY, "A transfer with a peer worker failed."));
    }

    @ExceptionHandler(InvalidMetadataException.class)
    public ResponseEntity<ProblemDetail> invalidMetadata(InvalidMetadataException e) {
        log.debug("Answering 400: {}", e.toString());
        ProblemDetail problem = problem(HttpStatus.BAD_REQUEST, "The transfer metadata is invalid.");
        problem.setProperty("field", e.field());
        return ResponseEntity.status(HttpStatus.BAD_REQUEST).body(problem);
    }

    private void warn(String answer, RuntimeException e) {
        if (log.isDebugEnabled()) {
            log.warn(answer, e);
            return;
        }
        StackTraceRateLimit.Verdict verdict = stackTraces.next(e.getClass());
        if (verdict.withStackTrace()) {
            log.warn("{}{}", answer, verdict.withoutSinceLast() == 0 ? ""
                    : " (" + verdict.withoutSinceLast() + " more of " + e.getClass().getSimpleName()
                            + " logged without a stack trace since the last)", e);
        } else {
            log.warn("{}: {} (stack trace: at most one per {} s per exception type, every one at DEBUG)", answer,
                    oneLine(e), stackTraces.interval().toSeconds());
        }
    }

    /** The exception and its first causes on one line: their messages can carry a peer's text, line breaks too. */
    static String oneLine(Throwable e) {
        StringBuilder line = new StringBuilder(e.toString());
        Throwable cause = e.getCause();
        for (int shown = 0; cause != null && cause != e && shown < ONE_LINE_CAUSES; shown++) {
            line.append("; caused by ").append(cause);
            cause = cause.getCause() == cause ? null : cause.getCause();
        }
        if (cause != null && cause != e) {
            line.append("; ...");
        }
        return line.toString().replaceAll("\\R", " ");
    }

    private static ProblemDetail problem(HttpStatus status, String detail) {
        return ProblemDetail.forStatusAndDetail(status, detail);
    }
}
