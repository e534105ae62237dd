#include "kiosk_cec.h"
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/cec.h>

static void copy_name(char *dst, size_t len, const char *src, size_t src_len) {
    if (len == 0) return;
    size_t n = strnlen(src, src_len);
    if (n >= len) n = len - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

int kiosk_cec_caps(int fd, char *driver, size_t driver_len, char *name, size_t name_len, uint32_t *capabilities) {
    struct cec_caps caps;
    memset(&caps, 0, sizeof caps);
    int r = ioctl(fd, CEC_ADAP_G_CAPS, &caps);
    if (r < 0) return r;
    copy_name(driver, driver_len, caps.driver, sizeof caps.driver);
    copy_name(name, name_len, caps.name, sizeof caps.name);
    *capabilities = caps.capabilities;
    return r;
}

int kiosk_cec_connector(int fd, uint32_t *type, uint32_t *card_no, uint32_t *connector_id) {
    struct cec_connector_info info;
    memset(&info, 0, sizeof info);
    int r = ioctl(fd, CEC_ADAP_G_CONNECTOR_INFO, &info);
    if (r < 0) return r;
    *type = info.type;
    *card_no = info.type == CEC_CONNECTOR_TYPE_DRM ? info.drm.card_no : 0;
    *connector_id = info.type == CEC_CONNECTOR_TYPE_DRM ? info.drm.connector_id : 0;
    return r;
}

int kiosk_cec_phys_addr(int fd, uint16_t *phys_addr) {
    __u16 pa = CEC_PHYS_ADDR_INVALID;
    int r = ioctl(fd, CEC_ADAP_G_PHYS_ADDR, &pa);
    if (r < 0) return r;
    *phys_addr = pa;
    return r;
}

int kiosk_cec_log_addrs(int fd, uint8_t *count, uint8_t *first_address, uint8_t *first_type) {
    struct cec_log_addrs la;
    memset(&la, 0, sizeof la);
    int r = ioctl(fd, CEC_ADAP_G_LOG_ADDRS, &la);
    if (r < 0) return r;
    *count = la.num_log_addrs;
    *first_address = la.num_log_addrs ? la.log_addr[0] : CEC_LOG_ADDR_INVALID;
    *first_type = la.num_log_addrs ? la.log_addr_type[0] : 0;
    return r;
}

int kiosk_cec_claim_playback(int fd, const char *osd_name) {
    struct cec_log_addrs la;
    memset(&la, 0, sizeof la);
    la.cec_version = CEC_OP_CEC_VERSION_1_4;
    la.vendor_id = CEC_VENDOR_ID_NONE;
    la.flags = CEC_LOG_ADDRS_FL_ALLOW_UNREG_FALLBACK;
    la.num_log_addrs = 1;
    la.log_addr_type[0] = CEC_LOG_ADDR_TYPE_PLAYBACK;
    la.primary_device_type[0] = CEC_OP_PRIM_DEVTYPE_PLAYBACK;
    la.all_device_types[0] = CEC_OP_ALL_DEVTYPE_PLAYBACK;
    copy_name(la.osd_name, sizeof la.osd_name, osd_name, strlen(osd_name));
    return ioctl(fd, CEC_ADAP_S_LOG_ADDRS, &la);
}

int kiosk_cec_transmit(int fd, const uint8_t *bytes, uint32_t len, uint8_t reply, uint32_t timeout_ms,
                       uint8_t *tx_status, uint8_t *rx_status, uint8_t *reply_bytes, uint32_t *reply_len) {
    struct cec_msg msg;
    memset(&msg, 0, sizeof msg);
    if (len == 0 || len > CEC_MAX_MSG_SIZE) { errno = EINVAL; return -1; }
    memcpy(msg.msg, bytes, len);
    msg.len = len;
    msg.reply = reply;
    msg.timeout = reply ? timeout_ms : 0;
    int r = ioctl(fd, CEC_TRANSMIT, &msg);
    if (r < 0) return r;
    *tx_status = msg.tx_status;
    *rx_status = msg.rx_status;
    *reply_len = 0;
    if (reply && (msg.rx_status & CEC_RX_STATUS_OK) && msg.len <= CEC_MAX_MSG_SIZE) {
        memcpy(reply_bytes, msg.msg, msg.len);
        *reply_len = msg.len;
    }
    return r;
}

int kiosk_cec_set_follower(int fd) {
    __u32 mode = CEC_MODE_INITIATOR | CEC_MODE_FOLLOWER;
    return ioctl(fd, CEC_S_MODE, &mode);
}

int kiosk_cec_receive(int fd, uint32_t timeout_ms, uint8_t *bytes, uint32_t *len) {
    struct cec_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.timeout = timeout_ms;
    *len = 0;
    int r = ioctl(fd, CEC_RECEIVE, &msg);
    if (r < 0) return r;
    if (msg.len > CEC_MAX_MSG_SIZE) { errno = EPROTO; return -1; }
    memcpy(bytes, msg.msg, msg.len);
    *len = msg.len;
    return r;
}
