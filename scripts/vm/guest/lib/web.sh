# shellcheck shell=bash
# The phone page from inside the guest, without curl (the arm64 root has none).

# http METHOD PATH [BODY] [COOKIE]: one request to the phone page on 127.0.0.1:8080 over bash's
# /dev/tcp; prints the answer (status line, headers, body).
http() {
  local cookie=""
  [ -z "${4:-}" ] || printf -v cookie 'Cookie: %s\r\n' "$4"
  exec 7<>/dev/tcp/127.0.0.1/8080 || return 1
  printf '%s %s HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: %s\r\n%s\r\n%s' \
    "$1" "$2" "${#3}" "$cookie" "${3:-}" >&7
  timeout 20 cat <&7
  exec 7<&-
}
