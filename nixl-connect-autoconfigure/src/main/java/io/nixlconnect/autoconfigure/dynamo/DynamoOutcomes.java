package io.nixlconnect.autoconfigure.dynamo;

import io.nixlconnect.dynamo.DynamoCancelledException;
import io.nixlconnect.dynamo.DynamoInstanceUnavailableException;
import io.nixlconnect.dynamo.DynamoRefusedException;
import io.nixlconnect.dynamo.DynamoTimeoutException;

/** The {@code outcome}, {@code error} and {@code reason} tag values, the same in meters and observations. */
final class DynamoOutcomes {

    static final String SUCCESS = "success";

    private DynamoOutcomes() {
    }

    /** A call's: success, cancelled, refused, timeout, unavailable (no instance) or error. */
    static String call(Throwable failure) {
        if (failure == null) {
            return SUCCESS;
        }
        if (failure instanceof DynamoCancelledException) {
            return "cancelled";
        }
        if (failure instanceof DynamoRefusedException) {
            return "refused";
        }
        if (failure instanceof DynamoTimeoutException) {
            return "timeout";
        }
        if (failure instanceof DynamoInstanceUnavailableException) {
            return "unavailable";
        }
        return "error";
    }

    /** A served request's: success, cancelled (its caller stopped or went away) or error (the handler threw). */
    static String request(Throwable failure) {
        if (failure == null) {
            return SUCCESS;
        }
        return failure instanceof DynamoCancelledException ? "cancelled" : "error";
    }

    /** A refusal's reason: overloaded (Dynamo's "Server overloaded"), malformed (undecodable) or other. */
    static String refusal(String reason) {
        if (reason != null && reason.startsWith(DynamoRefusedException.OVERLOADED_PREFIX)) {
            return "overloaded";
        }
        if (reason != null && reason.startsWith("Decode error")) {
            return "malformed";
        }
        return "other";
    }
}
