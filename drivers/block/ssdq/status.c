// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe statuses and errnos, printed so a reader can tell them apart. An
 * admin command ends in 0, a negative errno (it never ran, or never
 * completed) or the positive status the controller answered with; printed
 * as one "%d", -5 and 5 look alike and neither says what went wrong. So
 * an errno prints by name (%pe: "-ETIMEDOUT") and a status as hex with its
 * name from the NVMe base and NVM command set specifications ("NVMe status
 * 0x4002 (Invalid Field in Command, DNR)"). The table holds the statuses a
 * block driver can meet; the values are <linux/nvme.h>'s.
 */
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/nvme.h>

#include <ssdq/ssdq.h>

struct ssdq_status_name {
	u16 sct_sc;
	const char *name;
};

static const struct ssdq_status_name ssdq_status_names[] = {
	/* Generic Command Status */
	{ NVME_SC_SUCCESS,		"Successful Completion" },
	{ NVME_SC_INVALID_OPCODE,	"Invalid Command Opcode" },
	{ NVME_SC_INVALID_FIELD,	"Invalid Field in Command" },
	{ NVME_SC_CMDID_CONFLICT,	"Command ID Conflict" },
	{ NVME_SC_DATA_XFER_ERROR,	"Data Transfer Error" },
	{ NVME_SC_POWER_LOSS,		"Commands Aborted due to Power Loss" },
	{ NVME_SC_INTERNAL,		"Internal Error" },
	{ NVME_SC_ABORT_REQ,		"Command Abort Requested" },
	{ NVME_SC_ABORT_QUEUE,		"Command Aborted due to SQ Deletion" },
	{ NVME_SC_FUSED_FAIL,		"Command Aborted due to Failed Fused Command" },
	{ NVME_SC_FUSED_MISSING,	"Command Aborted due to Missing Fused Command" },
	{ NVME_SC_INVALID_NS,		"Invalid Namespace or Format" },
	{ NVME_SC_CMD_SEQ_ERROR,	"Command Sequence Error" },
	{ NVME_SC_SGL_INVALID_LAST,	"Invalid SGL Segment Descriptor" },
	{ NVME_SC_SGL_INVALID_COUNT,	"Invalid Number of SGL Descriptors" },
	{ NVME_SC_SGL_INVALID_DATA,	"Data SGL Length Invalid" },
	{ NVME_SC_SGL_INVALID_METADATA,	"Metadata SGL Length Invalid" },
	{ NVME_SC_SGL_INVALID_TYPE,	"SGL Descriptor Type Invalid" },
	{ NVME_SC_CMB_INVALID_USE,	"Invalid Use of Controller Memory Buffer" },
	{ NVME_SC_PRP_INVALID_OFFSET,	"PRP Offset Invalid" },
	{ NVME_SC_ATOMIC_WU_EXCEEDED,	"Atomic Write Unit Exceeded" },
	{ NVME_SC_OP_DENIED,		"Operation Denied" },
	{ NVME_SC_SGL_INVALID_OFFSET,	"SGL Offset Invalid" },
	{ NVME_SC_HOST_ID_INCONSIST,	"Host Identifier Inconsistent Format" },
	{ NVME_SC_KA_TIMEOUT_EXPIRED,	"Keep Alive Timer Expired" },
	{ NVME_SC_KA_TIMEOUT_INVALID,	"Keep Alive Timeout Invalid" },
	{ NVME_SC_ABORTED_PREEMPT_ABORT, "Command Aborted due to Preempt and Abort" },
	{ NVME_SC_SANITIZE_FAILED,	"Sanitize Failed" },
	{ NVME_SC_SANITIZE_IN_PROGRESS,	"Sanitize In Progress" },
	{ NVME_SC_NS_WRITE_PROTECTED,	"Namespace is Write Protected" },
	{ NVME_SC_CMD_INTERRUPTED,	"Command Interrupted" },
	{ NVME_SC_TRANSIENT_TR_ERR,	"Transient Transport Error" },
	{ NVME_SC_LBA_RANGE,		"LBA Out of Range" },
	{ NVME_SC_CAP_EXCEEDED,		"Capacity Exceeded" },
	{ NVME_SC_NS_NOT_READY,		"Namespace Not Ready" },
	{ NVME_SC_RESERVATION_CONFLICT,	"Reservation Conflict" },
	{ NVME_SC_FORMAT_IN_PROGRESS,	"Format In Progress" },
	/* Command Specific Status: queue creation, Abort, features */
	{ NVME_SC_CQ_INVALID,		"Completion Queue Invalid" },
	{ NVME_SC_QID_INVALID,		"Invalid Queue Identifier" },
	{ NVME_SC_QUEUE_SIZE,		"Invalid Queue Size" },
	{ NVME_SC_ABORT_LIMIT,		"Abort Command Limit Exceeded" },
	{ NVME_SC_INVALID_VECTOR,	"Invalid Interrupt Vector" },
	{ NVME_SC_INVALID_LOG_PAGE,	"Invalid Log Page" },
	{ NVME_SC_INVALID_FORMAT,	"Invalid Format" },
	{ NVME_SC_INVALID_QUEUE,	"Invalid Queue Deletion" },
	{ NVME_SC_FEATURE_NOT_SAVEABLE,	"Feature Identifier Not Saveable" },
	{ NVME_SC_FEATURE_NOT_CHANGEABLE, "Feature Not Changeable" },
	{ NVME_SC_FEATURE_NOT_PER_NS,	"Feature Not Namespace Specific" },
	/* Command Specific Status, NVM command set */
	{ NVME_SC_BAD_ATTRIBUTES,	"Conflicting Attributes" },
	{ NVME_SC_INVALID_PI,		"Invalid Protection Information" },
	{ NVME_SC_READ_ONLY,		"Attempted Write to Read Only Range" },
	/* Media and Data Integrity Errors */
	{ NVME_SC_WRITE_FAULT,		"Write Fault" },
	{ NVME_SC_READ_ERROR,		"Unrecovered Read Error" },
	{ NVME_SC_GUARD_CHECK,		"End-to-end Guard Check Error" },
	{ NVME_SC_APPTAG_CHECK,		"End-to-end Application Tag Check Error" },
	{ NVME_SC_REFTAG_CHECK,		"End-to-end Reference Tag Check Error" },
	{ NVME_SC_COMPARE_FAILED,	"Compare Failure" },
	{ NVME_SC_ACCESS_DENIED,	"Access Denied" },
	{ NVME_SC_UNWRITTEN_BLOCK,	"Deallocated or Unwritten Logical Block" },
	/* Path Related Status */
	{ NVME_SC_INTERNAL_PATH_ERROR,	"Internal Path Error" },
	{ NVME_SC_CTRL_PATH_ERROR,	"Controller Pathing Error" },
	{ NVME_SC_HOST_PATH_ERROR,	"Host Pathing Error" },
	{ NVME_SC_HOST_ABORTED_CMD,	"Command Aborted By Host" },
};

/* The name of a status's type and code (SCT/SC); the flags are ignored. */
const char *ssdq_status_name(u16 status)
{
	u16 sct_sc = status & NVME_SCT_SC_MASK;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ssdq_status_names); i++)
		if (ssdq_status_names[i].sct_sc == sct_sc)
			return ssdq_status_names[i].name;
	return "Unknown Status";
}

/* "NVMe status 0x4281 (Unrecovered Read Error, DNR)" */
const char *ssdq_status_str(struct ssdq_msg *m, u16 status)
{
	snprintf(m->s, sizeof(m->s), "NVMe status %#x (%s%s)", status,
		 ssdq_status_name(status),
		 status & NVME_STATUS_DNR ? ", DNR" : "");
	return m->s;
}

/* An admin command's result: an errno by name, else its NVMe status. */
const char *ssdq_result_str(struct ssdq_msg *m, int ret)
{
	if (ret >= 0)
		return ssdq_status_str(m, ret);
	snprintf(m->s, sizeof(m->s), "%pe", ERR_PTR(ret));
	return m->s;
}
