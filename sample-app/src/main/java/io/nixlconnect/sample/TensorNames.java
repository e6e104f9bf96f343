package io.nixlconnect.sample;

import java.util.regex.Pattern;

/** Tensor names as they appear in URLs: letters, digits, '.', '_' and '-', at most 128. */
final class TensorNames {

    private static final Pattern VALID = Pattern.compile("[A-Za-z0-9._-]{1,128}");

    private TensorNames() {
    }

    static String check(String name) {
        if (name == null || !VALID.matcher(name).matches()) {
            throw new IllegalArgumentException("Invalid tensor name '" + name + "': use 1 to 128 of A-Z a-z 0-9 . _ -");
        }
        return name;
    }
}
