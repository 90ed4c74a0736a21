package client

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// MaxSecretFileSize bounds a password or token file.
const MaxSecretFileSize = 64 << 10

// ReadSecretFile reads a password or token from path: the file's content
// without trailing white space (a final newline, say). An empty, unreadable
// or oversize file is an error naming the file, never its content.
func ReadSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: secret file: %v", ErrInvalidConfig, err)
	}
	defer f.Close()
	buf := make([]byte, MaxSecretFileSize+1)
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil {
			break
		}
	}
	if n > MaxSecretFileSize {
		return "", fmt.Errorf("%w: secret file %s is larger than %d bytes", ErrInvalidConfig, path, MaxSecretFileSize)
	}
	s := strings.TrimRight(string(buf[:n]), " \t\r\n")
	if s == "" {
		return "", fmt.Errorf("%w: secret file %s is empty", ErrInvalidConfig, path)
	}
	return s, nil
}

// RedactURL returns urls (one NATS URL or a comma-separated list) with the
// credentials of each removed: "nats://user:pass@host" becomes
// "nats://user:xxxxx@host" and "nats://token@host" becomes
// "nats://xxxxx@host". Something that does not parse as a URL but has an
// "@" loses everything before it. It is used wherever a URL is logged,
// printed or put in an error.
func RedactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		parts[i] = redactOne(p)
	}
	return strings.Join(parts, ",")
}

func redactOne(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" {
		if at := strings.LastIndex(s, "@"); at >= 0 {
			return "xxxxx" + s[at:]
		}
		return s
	}
	if u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	} else {
		u.User = url.User("xxxxx")
	}
	return u.String()
}
