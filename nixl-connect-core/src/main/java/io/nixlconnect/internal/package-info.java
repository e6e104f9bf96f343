/** Implementation details shared by the API and the backends. Not an API: may change in any release. */
package io.nixlconnect.internal;
