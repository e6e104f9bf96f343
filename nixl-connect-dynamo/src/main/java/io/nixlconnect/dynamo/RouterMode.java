package io.nixlconnect.dynamo;

/** How a {@link DynamoClient} picks an instance for a call not addressed to one, as Dynamo's client does. */
public enum RouterMode {
    /** Each instance in turn, in instance-id order. Dynamo's default. */
    ROUND_ROBIN,
    /** An instance drawn at random for each call. */
    RANDOM
}
