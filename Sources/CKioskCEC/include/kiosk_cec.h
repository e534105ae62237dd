#ifndef KIOSK_CEC_H
#define KIOSK_CEC_H
/* The kernel's HDMI-CEC API (<linux/cec.h>, ioctls on /dev/cecN) for the CEC link: the
   CEC_* request numbers are function-like C macros (_IOWR) that Swift cannot import, and the
   structures hold fixed arrays and unions, so each ioctl is a small C function taking and
   giving plain values. Every function returns what ioctl returns: -1 with errno on failure. */
#include <stddef.h>
#include <stdint.h>

/* CEC_ADAP_G_CAPS: the driver and adapter names (NUL-terminated, cut to the buffers) and the
   CEC_CAP_* bits. */
int kiosk_cec_caps(int fd, char *driver, size_t driver_len, char *name, size_t name_len, uint32_t *capabilities);
/* CEC_ADAP_G_CONNECTOR_INFO: the connector type (0 none, 1 DRM) and, for DRM, the card number
   and connector object id. ENOTTY on kernels and adapters without it. */
int kiosk_cec_connector(int fd, uint32_t *type, uint32_t *card_no, uint32_t *connector_id);
/* CEC_ADAP_G_PHYS_ADDR: the physical address (0xffff: none, e.g. the TV dropped hot-plug). */
int kiosk_cec_phys_addr(int fd, uint16_t *phys_addr);
/* CEC_ADAP_G_LOG_ADDRS: how many logical addresses are configured (0: none claimed yet) and the
   first one's address (0xff while it is being claimed) and type (CEC_LOG_ADDR_TYPE_*). */
int kiosk_cec_log_addrs(int fd, uint8_t *count, uint8_t *first_address, uint8_t *first_type);
/* CEC_ADAP_S_LOG_ADDRS: one Playback device (CEC 1.4, no vendor id, `osd_name` cut to 14
   bytes), falling back to Unregistered when no Playback address is free. On a blocking
   descriptor it returns once the address is claimed (at once while there is no physical
   address: the kernel claims it when one appears). */
int kiosk_cec_claim_playback(int fd, const char *osd_name);
/* CEC_TRANSMIT of `len` bytes (header first). `reply`: the opcode to wait for (0: none), for
   at most `timeout_ms`. The transmit status (CEC_TX_STATUS_*), the receive status
   (CEC_RX_STATUS_*) and the reply's bytes (at most 16; `reply_len` is its length, 0 without)
   are given back. */
int kiosk_cec_transmit(int fd, const uint8_t *bytes, uint32_t len, uint8_t reply, uint32_t timeout_ms,
                       uint8_t *tx_status, uint8_t *rx_status, uint8_t *reply_bytes, uint32_t *reply_len);
/* CEC_S_MODE: initiator and (non-exclusive) follower, so that messages sent to this device
   that the kernel does not handle itself (User Control Pressed/Released, Give Device Power
   Status, …) are queued for CEC_RECEIVE on this descriptor. With a follower the kernel no
   longer answers those with Feature Abort: the follower does. */
int kiosk_cec_set_follower(int fd);
/* CEC_RECEIVE: the next received message's bytes (at most 16, header first; `len` its length),
   waiting at most `timeout_ms` for one on a blocking descriptor (ETIMEDOUT: none in time; 0
   waits for ever, so callers poll the descriptor for POLLIN first). */
int kiosk_cec_receive(int fd, uint32_t timeout_ms, uint8_t *bytes, uint32_t *len);

#endif
