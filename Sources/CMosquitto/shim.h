#ifndef KIOSK_CMOSQUITTO_SHIM_H
#define KIOSK_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#include <mqtt_protocol.h>
#endif
